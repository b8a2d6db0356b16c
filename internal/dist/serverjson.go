package dist

import "fmt"

// The project's names on GitHub and in the MCP Registry.
const (
	// Name is the server's name: its binary, and the first part of every
	// release file's name.
	Name = "wink-mcp"
	// RegistryName is the server's name in the MCP Registry; the
	// io.github.OWNER prefix is verified against the GitHub organisation.
	RegistryName = "io.github.wink-mcp/wink-mcp"
	// Repo is the source repository.
	Repo = "https://github.com/wink-mcp/wink-mcp"
	// ServerSchema is the schema server.json follows.
	ServerSchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
	// registryDescription is server.json's description (at most 100
	// characters).
	registryDescription = "Files and a plan for agents: every call validated, checked by policies, run as a transaction."
)

// DownloadURL returns the address of the release file name of version v
// once it is uploaded to the GitHub release of tag v<v>.
func DownloadURL(v, name string) string {
	return fmt.Sprintf("%s/releases/download/v%s/%s", Repo, v, name)
}

// ServerJSON is the server.json a release publishes to the MCP Registry
// with mcp-publisher.
type ServerJSON struct {
	Schema      string     `json:"$schema"`
	Name        string     `json:"name"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Repository  SourceRepo `json:"repository"`
	WebsiteURL  string     `json:"websiteUrl"`
	Version     string     `json:"version"`
	Packages    []Package  `json:"packages"`
}

// SourceRepo is server.json's repository.
type SourceRepo struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// Package is one package of server.json: for this project an MCP Bundle,
// named by its download URL and pinned by its SHA-256.
type Package struct {
	RegistryType string    `json:"registryType"`
	Identifier   string    `json:"identifier"`
	Version      string    `json:"version"`
	FileSha256   string    `json:"fileSha256"`
	Transport    Transport `json:"transport"`
}

// Transport is how a client talks to a package's server.
type Transport struct {
	Type string `json:"type"`
}

// serverJSON returns the server.json of version v, with one mcpb package
// per bundle; sums maps a bundle's file name to its SHA-256 in hex.
func serverJSON(v string, bundles []string, sums map[string]string) *ServerJSON {
	s := &ServerJSON{
		Schema:      ServerSchema,
		Name:        RegistryName,
		Title:       "wink",
		Description: registryDescription,
		Repository:  SourceRepo{URL: Repo, Source: "github"},
		WebsiteURL:  Repo,
		Version:     v,
	}
	for _, b := range bundles {
		s.Packages = append(s.Packages, Package{
			RegistryType: "mcpb",
			Identifier:   DownloadURL(v, b),
			Version:      v,
			FileSha256:   sums[b],
			Transport:    Transport{Type: "stdio"},
		})
	}
	return s
}
