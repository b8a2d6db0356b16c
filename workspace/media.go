package workspace

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// MaxMediaBytes is the largest image or PDF read_file returns: 5 MiB,
// about 6.7 MB once base64-encoded.
const MaxMediaBytes = 5 << 20

// mediaTypes are the media read_file returns as content blocks, by
// extension: images as image blocks, PDFs as embedded resources.
var mediaTypes = map[string]string{
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
	".pdf":  "application/pdf",
}

// mediaType returns the media type of the file at p when both its
// extension and its content say it is a supported image or a PDF, and ""
// otherwise: a file named like an image that holds text is text.
func mediaType(p string, data []byte) string {
	want, ok := mediaTypes[strings.ToLower(path.Ext(p))]
	if !ok {
		return ""
	}
	sniffed, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if sniffed != want {
		return ""
	}
	return want
}

// mediaBlock returns the content block of a file of media type mime: an
// image block, or for a PDF an embedded resource with the file's resource
// URI; or a failure for a file over MaxMediaBytes.
func mediaBlock(p, mime string, data []byte) (mcp.Content, *failure) {
	if len(data) > MaxMediaBytes {
		return nil, failf("File %s (%s) is %d bytes; images and PDFs are read up to %d bytes.", p, mime, len(data), MaxMediaBytes)
	}
	b64 := base64.StdEncoding.EncodeToString(data)
	if mime == "application/pdf" {
		return mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: FileURI(p), MIMEType: mime, Blob: b64}), nil
	}
	return mcp.NewImageContent(b64, mime), nil
}

// mediaMessage is the message of a read that returned a media block.
func mediaMessage(p, mime string, size int) string {
	what := "image"
	if mime == "application/pdf" {
		what = "PDF"
	}
	return fmt.Sprintf("Read %s %s (%s, %s); its content is attached.", what, p, mime, plural(size, "byte", "bytes"))
}
