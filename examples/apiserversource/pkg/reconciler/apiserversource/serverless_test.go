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

package apiserversource

import (
	"path/filepath"
	"testing"

	"knative.dev/eventing/pkg/reconciler/apiserversource/resources"

	"github.com/frugal-operator/foo-operator/test/upstream"
)

// The files that ../../../UPSTREAM lists are eventing's, unchanged: only
// serverless.go, this test, the command, the rest of config/ and the e2e
// were added.
func TestTheFilesAreEventingsUnchanged(t *testing.T) {
	n, err := upstream.Unchanged(filepath.Join("..", "..", ".."), "knative.dev/eventing")
	if err != nil {
		t.Error(err)
	}
	if n != 8 {
		t.Errorf("UPSTREAM lists %d files, want the 6 of the reconciler and the 2 CRDs", n)
	}
	if got := resources.Labels("x")[ownerLabel]; got != "x" {
		t.Errorf("resources.Labels puts %q in %s, want the ApiServerSource's name", got, ownerLabel)
	}
}
