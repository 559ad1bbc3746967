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
// Command lowerrequests reads Kubernetes YAML on stdin and writes it to stdout
// with every workload container's resource requests lowered to 10m CPU and
// 20Mi of memory, so that all of Knative fits on the one-node cluster's two
// cores. Limits are kept.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true}

func main() {
	if err := lower(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lowerrequests:", err)
		os.Exit(1)
	}
}

func lower(in io.Reader, out io.Writer) error {
	dec, enc := yaml.NewDecoder(in), yaml.NewEncoder(out)
	enc.SetIndent(2)
	defer enc.Close()
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if doc == nil {
			continue
		}
		if kind, _ := doc["kind"].(string); workloads[kind] {
			spec := path(doc, "spec", "template", "spec")
			for _, list := range []string{"initContainers", "containers"} {
				containers, _ := spec[list].([]any)
				for _, c := range containers {
					container, _ := c.(map[string]any)
					if container == nil {
						continue
					}
					resources, _ := container["resources"].(map[string]any)
					if resources == nil {
						resources = map[string]any{}
						container["resources"] = resources
					}
					resources["requests"] = map[string]any{"cpu": "10m", "memory": "20Mi"}
				}
			}
		}
		if err := enc.Encode(doc); err != nil {
			return err
		}
	}
}

// path returns the map at keys under m, or an empty map.
func path(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	if m == nil {
		return map[string]any{}
	}
	return m
}
