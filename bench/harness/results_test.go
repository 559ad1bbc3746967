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

package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// The committed results hold what a reader opens, and nothing bulky: the
// harnesses write profiles under _output.
func TestResultFoldersHoldOnlyResults(t *testing.T) {
	runs, err := os.ReadDir(filepath.Join("..", "results"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"results.md": true, "results.json": true, "chart.png": true}
	for _, run := range runs {
		if !run.IsDir() {
			t.Errorf("bench/results/%s: want only folders, one a run", run.Name())
			continue
		}
		files, err := os.ReadDir(filepath.Join("..", "results", run.Name()))
		if err != nil {
			t.Fatal(err)
		}
		hasMarkdown := false
		for _, f := range files {
			if !allowed[f.Name()] {
				t.Errorf("bench/results/%s/%s: a results folder holds results.md, results.json and chart.png only", run.Name(), f.Name())
			}
			hasMarkdown = hasMarkdown || f.Name() == "results.md"
		}
		if !hasMarkdown {
			t.Errorf("bench/results/%s has no results.md", run.Name())
		}
	}
}
