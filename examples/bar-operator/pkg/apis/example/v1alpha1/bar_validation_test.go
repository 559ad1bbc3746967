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

package v1alpha1

import (
	"context"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBarValidate(t *testing.T) {
	keys := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m["k"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	tests := []struct {
		name    string
		barName string
		data    map[string]string
		want    string
	}{{
		name: "no data",
	}, {
		name: "valid keys",
		data: map[string]string{"a": "1", "app.properties": "x=1\n", "B_2-c": "", ".hidden": "y"},
	}, {
		name: "most keys",
		data: keys(MaxDataKeys),
	}, {
		name: "too many keys",
		data: keys(MaxDataKeys + 1),
		want: "expected 0 <= 101 <= 100: spec.data",
	}, {
		name: "key with a slash",
		data: map[string]string{"a/b": "1"},
		want: `invalid key name "a/b": spec.data`,
	}, {
		name: "key dot-dot",
		data: map[string]string{"..": "1"},
		want: `invalid key name "..": spec.data`,
	}, {
		name: "key dot",
		data: map[string]string{".": "1"},
		want: `invalid key name ".": spec.data`,
	}, {
		name: "key too long",
		data: map[string]string{strings.Repeat("k", 254): "1"},
		want: `invalid key name "kkk`,
	}, {
		name: "largest data",
		data: map[string]string{"a": strings.Repeat("x", MaxDataBytes-1)},
	}, {
		name: "data too large by one byte",
		data: map[string]string{"a": strings.Repeat("x", MaxDataBytes)},
		want: "data too large: spec.data",
	}, {
		name: "keys count towards the size",
		data: map[string]string{"a": strings.Repeat("x", MaxDataBytes/2), "bb": strings.Repeat("x", MaxDataBytes/2-2)},
		want: "data too large: spec.data",
	}, {
		name: "size counted in bytes, not characters",
		data: map[string]string{"a": strings.Repeat("é", MaxDataBytes/2)},
		want: "data too large: spec.data",
	}, {
		name:    "longest name",
		barName: strings.Repeat("b", 63),
	}, {
		name:    "name too long for a label value",
		barName: strings.Repeat("b", 64),
		want:    "invalid value: " + strings.Repeat("b", 64) + ": metadata.name",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &Bar{ObjectMeta: metav1.ObjectMeta{Name: tc.barName}, Spec: BarSpec{Data: tc.data}}
			err := b.Validate(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want it to start with %q", err, tc.want)
			}
		})
	}
}
