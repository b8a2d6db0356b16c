package hooks

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/wink-mcp/wink-mcp/session"
	"github.com/wink-mcp/wink-mcp/tools"
)

// SecretSource says where a secret's value comes from: an environment
// variable or a file (whose content is trimmed of surrounding white space).
// Exactly one is set.
type SecretSource struct {
	Env  string `json:"env" jsonschema:"The environment variable that holds the value." schema:"minLength=1"`
	File string `json:"file" jsonschema:"The file that holds the value (white space around it is trimmed)." schema:"minLength=1"`
}

// secretsKey is the shared resource that holds the secrets.
var secretsKey = session.NewResourceKey[secrets]("hooks.secrets")

type secrets map[string]string

// Secret returns the secret called name, for a tool's handler. Secrets
// come from the environment or from files, named in the configuration;
// they reach handlers this way, never through the model's arguments, and
// their values are redacted from what the model sees and from what is
// logged and audited.
func Secret(ctx *tools.Context, name string) (string, error) {
	s, err := tools.Resource(ctx, secretsKey)
	if err != nil {
		return "", fmt.Errorf("no secrets are configured")
	}
	v, ok := s[name]
	if !ok {
		return "", fmt.Errorf("no secret %q is configured", name)
	}
	return v, nil
}

// Setup registers the secrets with the server's session registry; pass it
// as server.Options.Setup.
func (h *Hooks) Setup(r *session.Registry) {
	if len(h.secrets) > 0 {
		session.Share(r, secretsKey, h.secrets)
	}
}

// loadSecrets reads the secrets' values.
func loadSecrets(srcs map[string]SecretSource, bad func(key, format string, args ...any)) secrets {
	out := secrets{}
	for name, src := range srcs {
		key := "secrets." + name
		switch {
		case (src.Env == "") == (src.File == ""):
			bad(key, "set exactly one of env and file")
		case src.Env != "":
			v, ok := os.LookupEnv(src.Env)
			if !ok || v == "" {
				bad(key+".env", "environment variable %s is not set", src.Env)
				continue
			}
			out[name] = v
		default:
			b, err := os.ReadFile(src.File)
			if err != nil {
				bad(key+".file", "%v", err)
				continue
			}
			v := strings.TrimSpace(string(b))
			if v == "" {
				bad(key+".file", "%s is empty", src.File)
				continue
			}
			out[name] = v
		}
	}
	return out
}

// minRedactedSecret is the shortest secret whose value is redacted from
// output; shorter ones would blot out ordinary text.
const minRedactedSecret = 6

// secretPatterns returns patterns matching the secrets' values.
func secretPatterns(s secrets) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, v := range s {
		if len(v) >= minRedactedSecret {
			out = append(out, regexp.MustCompile(regexp.QuoteMeta(v)))
		}
	}
	return out
}
