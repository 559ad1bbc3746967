/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package upstream checks the files an example copied from a module it
// depends on: they must be the module's, byte for byte.
package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Unchanged compares each file that dir's UPSTREAM lists (lines of this
// folder's path, then the path in module; # starts a comment) with the
// module's copy, of the version go.mod names, and returns how many it
// compared, and an error naming each file that differs.
func Unchanged(dir, module string) (int, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		return 0, fmt.Errorf("go mod download %s: %w", module, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return 0, fmt.Errorf("go mod download -json %s: %v (%s)", module, err, out)
	}
	list, err := os.ReadFile(filepath.Join(dir, "UPSTREAM"))
	if err != nil {
		return 0, err
	}
	n, differ := 0, []string(nil)
	for _, line := range strings.Split(string(list), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 {
			return n, fmt.Errorf("UPSTREAM: %q is not a path here and a path in %s", line, module)
		}
		theirs, err := os.ReadFile(filepath.Join(mod.Dir, f[1]))
		if err != nil {
			return n, err
		}
		ours, err := os.ReadFile(filepath.Join(dir, f[0]))
		if err != nil {
			return n, err
		}
		if !bytes.Equal(ours, theirs) {
			differ = append(differ, fmt.Sprintf("%s differs from %s's %s", f[0], module, f[1]))
		}
		n++
	}
	if len(differ) > 0 {
		return n, fmt.Errorf("%s", strings.Join(differ, "; "))
	}
	return n, nil
}
