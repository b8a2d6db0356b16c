package dist

import (
	"archive/zip"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// manifestTemplate is the bundle manifest without what a release fills in:
// the version, the platform, the entry point's name on Windows and the
// tools.
//
//go:embed manifest.json
var manifestTemplate []byte

// Manifest is an MCP Bundle's manifest.json, manifest_version 0.3, with
// the fields this project's bundles use. Its JSON keys keep the order of
// the template.
type Manifest struct {
	ManifestVersion string          `json:"manifest_version"`
	Name            string          `json:"name"`
	DisplayName     string          `json:"display_name,omitempty"`
	Version         string          `json:"version"`
	Description     string          `json:"description"`
	LongDescription string          `json:"long_description,omitempty"`
	Author          Author          `json:"author"`
	Repository      *Repository     `json:"repository,omitempty"`
	Homepage        string          `json:"homepage,omitempty"`
	Documentation   string          `json:"documentation,omitempty"`
	Support         string          `json:"support,omitempty"`
	License         string          `json:"license,omitempty"`
	Keywords        []string        `json:"keywords,omitempty"`
	Server          BundleServer    `json:"server"`
	Tools           []Tool          `json:"tools,omitempty"`
	Compatibility   *Compatibility  `json:"compatibility,omitempty"`
	UserConfig      json.RawMessage `json:"user_config,omitempty"` // kept as written: its keys' order is the order Claude Desktop asks in
}

// Author is a manifest's author.
type Author struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Repository is a manifest's source repository.
type Repository struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// BundleServer is how the host starts a bundle's server.
type BundleServer struct {
	Type       string    `json:"type"`
	EntryPoint string    `json:"entry_point"`
	MCPConfig  MCPConfig `json:"mcp_config"`
}

// MCPConfig is the command line of a bundle's server, before the host
// substitutes ${__dirname}, ${HOME} and ${user_config.KEY} in it.
type MCPConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// Tool is a tool a bundle lists: its name and the first sentence of its
// description.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Compatibility says where a bundle runs.
type Compatibility struct {
	Platforms []string `json:"platforms"`
}

// UserOption is one entry of a manifest's user_config: a value the host
// asks the user for when the bundle is installed.
type UserOption struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Default     any    `json:"default"`
}

// templateManifest returns the manifest of the bundle of version v for t,
// listing tools.
func templateManifest(v string, t Target, tools []Tool) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(manifestTemplate))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest.json template: %v", err)
	}
	m.Version = v
	m.Compatibility = &Compatibility{Platforms: []string{t.Platform()}}
	m.Server.EntryPoint = "server/" + t.Binary()
	m.Server.MCPConfig.Command = "${__dirname}/" + m.Server.EntryPoint
	m.Tools = tools
	if _, err := m.Options(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Options returns the manifest's user_config by key.
func (m *Manifest) Options() (map[string]UserOption, error) {
	opts := map[string]UserOption{}
	if len(m.UserConfig) == 0 {
		return opts, nil
	}
	if err := json.Unmarshal(m.UserConfig, &opts); err != nil {
		return nil, fmt.Errorf("manifest user_config: %v", err)
	}
	return opts, nil
}

// placeholder matches a ${...} of a manifest's mcp_config.
var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// Command returns the command, arguments and environment that a host such
// as Claude Desktop starts for the bundle unpacked in dirname: it
// substitutes ${__dirname}, ${HOME} (home), ${pathSeparator} and
// ${user_config.KEY} (values[KEY], else the option's default) in
// mcp_config. It fails on a placeholder it does not know, on a KEY the
// manifest does not declare, and on a required option without a value,
// so that an option that would never reach the server is caught.
func (m *Manifest) Command(dirname, home string, values map[string]string) (string, []string, map[string]string, error) {
	opts, err := m.Options()
	if err != nil {
		return "", nil, nil, err
	}
	for k := range values {
		if _, ok := opts[k]; !ok {
			return "", nil, nil, fmt.Errorf("user_config has no option %q", k)
		}
	}
	var bad error
	subst := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(p string) string {
			key := placeholder.FindStringSubmatch(p)[1]
			switch {
			case key == "__dirname":
				return dirname
			case key == "HOME":
				return home
			case key == "pathSeparator" || key == "/":
				return string(filepath.Separator)
			case strings.HasPrefix(key, "user_config."):
				k := strings.TrimPrefix(key, "user_config.")
				o, ok := opts[k]
				if !ok {
					bad = fmt.Errorf("mcp_config uses %s, which user_config does not declare", p)
					return p
				}
				if v, ok := values[k]; ok {
					return v
				}
				if o.Default != nil {
					return fmt.Sprint(o.Default)
				}
				if o.Required {
					bad = fmt.Errorf("user_config option %q is required and has no value", k)
				}
				return ""
			}
			bad = fmt.Errorf("mcp_config uses %s, which this host does not substitute", p)
			return p
		})
	}
	command := subst(m.Server.MCPConfig.Command)
	var args []string
	for _, a := range m.Server.MCPConfig.Args {
		args = append(args, subst(a))
	}
	env := map[string]string{}
	for k, v := range m.Server.MCPConfig.Env {
		env[k] = subst(v)
	}
	if bad != nil {
		return "", nil, nil, bad
	}
	return command, args, env, nil
}

// Unpack unpacks the bundle at path into dir as Claude Desktop and the
// mcpb CLI do (unzip) and returns its manifest.
func Unpack(path, dir string) (*Manifest, error) {
	if err := unzip(path, dir); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %v", path, err)
	}
	return &m, nil
}

// unzip writes every entry of the zip at path under dir, refusing an
// entry that would land outside it, and gives an entry whose external
// attributes carry a Unix mode that mode, as the mcpb CLI's unpacker
// does.
func unzip(path, dir string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		dst := filepath.Join(root, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(dst, root+string(filepath.Separator)) {
			return fmt.Errorf("%s: entry %q lands outside the folder it is unpacked in", path, f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := unpackFile(f, dst); err != nil {
			return fmt.Errorf("%s: %s: %v", path, f.Name, err)
		}
		if mode := os.FileMode(f.ExternalAttrs>>16) & 0o777; mode != 0 {
			if err := os.Chmod(dst, mode); err != nil {
				return err
			}
		}
	}
	return nil
}

func unpackFile(f *zip.File, dst string) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
