package workspace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// Files whose first bytes say what they are, as net/http sniffs them.
const (
	pngData  = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
	jpegData = "\xff\xd8\xff\xe0\x00\x10JFIF\x00"
	gifData  = "GIF89a\x01\x00\x01\x00\x00\x00\x00;"
	webpData = "RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00"
	pdfData  = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"
)

// TestReadMedia: read_file returns an image as an image block and a PDF as
// an embedded resource, when the extension and the content agree; a file
// named like one that holds something else is read as what it is.
func TestReadMedia(t *testing.T) {
	files := map[string]string{
		"img/a.png":     pngData,
		"img/b.JPG":     jpegData,
		"img/c.jpeg":    jpegData,
		"img/d.gif":     gifData,
		"img/e.webp":    webpData,
		"doc/f.pdf":     pdfData,
		"img/text.png":  "not an image\n",
		"img/png.jpg":   pngData,
		"img/image.bin": pngData,
		"img/big.png":   pngData + strings.Repeat("\x00", MaxMediaBytes),
	}
	cases := []struct {
		path, text, kind, mime, data string
		isErr                        bool
	}{
		{"img/a.png", "Read image img/a.png (image/png, 29 bytes); its content is attached.", "image", "image/png", pngData, false},
		{"img/b.JPG", "Read image img/b.JPG (image/jpeg, 11 bytes); its content is attached.", "image", "image/jpeg", jpegData, false},
		{"img/c.jpeg", "Read image img/c.jpeg (image/jpeg, 11 bytes); its content is attached.", "image", "image/jpeg", jpegData, false},
		{"img/d.gif", "Read image img/d.gif (image/gif, 14 bytes); its content is attached.", "image", "image/gif", gifData, false},
		{"img/e.webp", "Read image img/e.webp (image/webp, 20 bytes); its content is attached.", "image", "image/webp", webpData, false},
		{"doc/f.pdf", "Read PDF doc/f.pdf (application/pdf, 35 bytes); its content is attached.", "resource", "application/pdf", pdfData, false},
		{"img/text.png", "Read file img/text.png (lines 1-1 of 1).\n\n   1 | not an image", "", "", "", false},
		{"img/png.jpg", "File img/png.jpg is binary; only UTF-8 text can be read or edited.", "", "", "", true},
		{"img/image.bin", "File img/image.bin is binary; only UTF-8 text can be read or edited.", "", "", "", true},
		{"img/big.png", "File img/big.png (image/png) is 5242909 bytes; images and PDFs are read up to 5242880 bytes.", "", "", "", true},
	}
	eachBackend(t, func(t *testing.T, bk backendKind) {
		h := newHarness(t, bk, files)
		for _, c := range cases {
			args, _ := json.Marshal(map[string]string{"file_path": c.path})
			r := h.cs.Call(context.Background(), "read_file", json.RawMessage(args), nil)
			if got := r.Said(); got != c.text || r.IsError != c.isErr {
				t.Errorf("%s: (isError=%v) %q, want (isError=%v) %q", c.path, r.IsError, got, c.isErr, c.text)
			}
			var blocks []string
			for _, b := range r.Content {
				switch {
				case b.Type == "image":
					blocks = append(blocks, "image "+b.MIMEType+" "+b.Data)
				case b.Type == "resource" && b.Resource != nil:
					blocks = append(blocks, "resource "+b.Resource.MIMEType+" "+b.Resource.Blob+" "+b.Resource.URI)
				}
			}
			var want []string
			switch c.kind {
			case "image":
				want = []string{"image " + c.mime + " " + base64.StdEncoding.EncodeToString([]byte(c.data))}
			case "resource":
				want = []string{"resource " + c.mime + " " + base64.StdEncoding.EncodeToString([]byte(c.data)) + " " + FileURI(c.path)}
			}
			if strings.Join(blocks, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: blocks %q, want %q", c.path, blocks, want)
			}
			if c.kind != "" && r.StructuredContent["mime_type"] != c.mime {
				t.Errorf("%s: structured content %v, want mime_type %s", c.path, r.StructuredContent, c.mime)
			}
		}
		// read_multiple_files attaches them too, and an image read counts
		// as read.
		r := h.cs.Call(context.Background(), "read_multiple_files", json.RawMessage(`{"paths":["img/a.png","img/text.png"]}`), nil)
		if n := len(r.Content); n != 2 || r.Content[1].Type != "image" {
			t.Errorf("read_multiple_files content = %+v, want text and one image", r.Content)
		}
		step{"move_file", `{"source":"img/d.gif","destination":"img/a.png","overwrite":true}`, "Moved file img/d.gif to img/a.png, replacing the file there.", false}.check(t, h)
	})
}
