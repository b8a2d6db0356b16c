package dist

import (
	"fmt"
	"regexp"
	"strings"
)

// semver matches a version of Semantic Versioning 2.0.0 without build
// metadata: MAJOR.MINOR.PATCH, each without leading zeros, and an optional
// pre-release of dot-separated identifiers.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)

// ParseVersion returns the release version of a tag: version without its
// leading "v" ("v1.2.3" and "1.2.3" give "1.2.3"). It refuses an empty
// version and one that is not semver; build metadata ("+...") is refused
// too, since the version is part of file names and download URLs.
func ParseVersion(version string) (string, error) {
	if version == "" {
		return "", fmt.Errorf("no VERSION given; usage: scripts/dist VERSION OUTDIR, e.g. scripts/dist v1.2.3 dist")
	}
	v := strings.TrimPrefix(version, "v")
	if !semver.MatchString(v) {
		return "", fmt.Errorf("VERSION %q is not semver: want vMAJOR.MINOR.PATCH with an optional -PRERELEASE, e.g. v1.2.3 or v1.3.0-rc.1", version)
	}
	return v, nil
}
