package dist_test

import (
	"fmt"

	"github.com/wink-mcp/wink-mcp/internal/dist"
)

func ExampleParseVersion() {
	v, err := dist.ParseVersion("v1.3.0-rc.1")
	fmt.Println(v, err)
	_, err = dist.ParseVersion("v1.3")
	fmt.Println(err)
	// Output:
	// 1.3.0-rc.1 <nil>
	// VERSION "v1.3" is not semver: want vMAJOR.MINOR.PATCH with an optional -PRERELEASE, e.g. v1.2.3 or v1.3.0-rc.1
}

func ExampleTarget() {
	for _, t := range []dist.Target{{OS: "darwin", Arch: "arm64"}, {OS: "windows", Arch: "amd64"}} {
		fmt.Println(t.Archive("1.2.3"), t.Bundle("1.2.3"), t.Platform(), t.Binary())
		fmt.Println(dist.DownloadURL("1.2.3", t.Bundle("1.2.3")))
	}
	// Output:
	// wink-mcp_1.2.3_darwin_arm64.tar.gz wink-mcp_1.2.3_darwin_arm64.mcpb darwin wink-mcp
	// https://github.com/wink-mcp/wink-mcp/releases/download/v1.2.3/wink-mcp_1.2.3_darwin_arm64.mcpb
	// wink-mcp_1.2.3_windows_amd64.zip wink-mcp_1.2.3_windows_amd64.mcpb win32 wink-mcp.exe
	// https://github.com/wink-mcp/wink-mcp/releases/download/v1.2.3/wink-mcp_1.2.3_windows_amd64.mcpb
}
