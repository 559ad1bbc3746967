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

package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// goBlock matches a fenced Go block of a document.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestTheGuidesGoIsTheExamples checks that every Go block of the docs is
// code of the repository, which compiles and is tested: its lines, but for
// blank and comment lines, appear in that order and in a row in one Go
// file.
func TestTheGuidesGoIsTheExamples(t *testing.T) {
	sources := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_output" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources[path] = codeLines(string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatch(string(b), -1) {
			block := codeLines(m[1])
			if len(block) == 0 {
				continue
			}
			found := false
			for _, lines := range sources {
				if containsRun(lines, block) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: this Go block is in no Go file of the repository:\n%s", doc, m[1])
			}
		}
	}
}

// codeLines returns the lines of src that are neither blank nor comments
// (directives, as //go:generate, are code), trimmed.
func codeLines(src string) []string {
	var lines []string
	for l := range strings.SplitSeq(src, "\n") {
		if l = strings.TrimSpace(l); l != "" && (!strings.HasPrefix(l, "//") || strings.HasPrefix(l, "//go:")) {
			lines = append(lines, l)
		}
	}
	return lines
}

// containsRun tells whether run appears in lines, in a row.
func containsRun(lines, run []string) bool {
	for i := range lines {
		if len(lines)-i >= len(run) && slices.Equal(lines[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// roleHeader matches a line of the guide's roles block that names a role:
// "# 200-roles.yaml, Role bar-reconciler in bar-operator".
var roleHeader = regexp.MustCompile(`^# (\S+\.yaml), (Role|ClusterRole) ([^\s,]+)`)

// TestTheGuidesRolesAreTheExamples checks the roles that
// docs/operator-guide.md shows, one rule a line, against the Bar
// operator's config/: each role's rules, all of them, in order.
func TestTheGuidesRolesAreTheExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "operator-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string][]rbacv1.PolicyRule{}
	var role string
	for l := range strings.SplitSeq(string(b), "\n") {
		if m := roleHeader.FindStringSubmatch(l); m != nil {
			role = m[1] + " " + m[2] + " " + m[3]
			shown[role] = nil
			continue
		}
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "```") {
			role = "" // another comment, or the block's end
		}
		if role == "" || !strings.HasPrefix(l, "- {") {
			continue
		}
		var r rbacv1.PolicyRule
		if err := yaml.UnmarshalStrict([]byte(l[2:strings.LastIndex(l, "}")+1]), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		shown[role] = append(shown[role], r)
	}
	if len(shown) == 0 {
		t.Fatal("the guide shows no role")
	}
	for role, rules := range shown {
		f := strings.Fields(role)
		kind, name := f[1], f[2]
		var want []rbacv1.PolicyRule
		config, err := os.ReadFile(filepath.Join(root, "examples", "bar-operator", "config", f[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(config), "\n---\n") {
			var r struct {
				Kind     string
				Metadata struct{ Name string }
				Rules    []rbacv1.PolicyRule
			}
			if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == kind && r.Metadata.Name == name {
				want = r.Rules
			}
		}
		if diff := cmp.Diff(want, rules); diff != "" {
			t.Errorf("the guide's %s (-config, +guide):\n%s", role, diff)
		}
	}
}
