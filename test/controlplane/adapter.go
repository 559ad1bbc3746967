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

package controlplane

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AdapterConfig is the ApiServerSource adapter's K_SOURCE_CONFIG, spelt as
// knative.dev/eventing/pkg/adapter/apiserver.Config marshals it, so that
// tests need not depend on knative.dev/eventing.
type AdapterConfig struct {
	// Namespaces are the namespaces to watch, unless AllNamespaces.
	Namespaces    []string `json:"namespaces"`
	AllNamespaces bool     `json:"allNamespaces,omitempty"`
	// Resources are the resources to watch.
	Resources []AdapterResource `json:"resources"`
	// Owner, if set, passes only objects owned by this kind.
	Owner *AdapterOwner `json:"owner,omitempty"`
	// Mode is "Resource" (the event carries the object) or "Reference" (the
	// default: it carries a reference to it).
	Mode string `json:"mode,omitempty"`
	// FailFast makes the adapter exit when a watch fails instead of
	// retrying.
	FailFast bool `json:"failFast,omitempty"`
}

// AdapterResource is one resource the adapter watches.
type AdapterResource struct {
	GVR           schema.GroupVersionResource `json:"gvr"`
	LabelSelector string                      `json:"selector,omitempty"`
}

// AdapterOwner is the kind whose owned objects the adapter passes on.
type AdapterOwner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// StartAdapter starts Knative's ApiServerSource receive adapter (the
// "adapter" binary of hack/build-tools.sh) as a tracked process that sends
// the events of the objects sourceConfig selects to sink. sourceConfig is
// marshalled with encoding/json into K_SOURCE_CONFIG: an AdapterConfig, or a
// json.RawMessage. kubeconfig is whom the adapter watches as; empty means
// the admin. env is added to the adapter's environment, last: for instance
// K_AUDIENCE and K_OIDC_SERVICE_ACCOUNT, with which it sends OIDC tokens of
// that service account (of namespace) for that audience.
//
// The adapter exits at once if a watched group/version is not served, so
// install CRDs, and wait for them to be established, before starting it. It
// reports no readiness and sends nothing for objects that exist when its
// watch starts: a test that needs delivery should change a canary object
// until the sink sees its event. The adapter listens on no port: its health
// probes are compiled out and PROFILING_PORT is set to a port that cannot be
// bound.
func (c *ControlPlane) StartAdapter(name, namespace, sink string, sourceConfig any, kubeconfig string, env ...string) (*Process, error) {
	bin, err := BinaryPath("adapter")
	if err != nil {
		return nil, err
	}
	config, err := json.Marshal(sourceConfig)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal the source config of adapter %s/%s: %w", namespace, name, err)
	}
	if kubeconfig == "" {
		kubeconfig = c.AdminKubeconfig
	}
	cmd := exec.Command(bin)
	cmd.Dir = c.Dir
	// Later entries win, so these override anything inherited.
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"K_SINK="+sink,
		"NAME="+name,
		"NAMESPACE="+namespace,
		"K_SOURCE_CONFIG="+string(config),
		// knative.dev/pkg listens on ":"+PROFILING_PORT, every interface, and
		// only logs a warning when that fails.
		"PROFILING_PORT=-1",
	)
	cmd.Env = append(cmd.Env, env...)
	return c.StartProcess("adapter-"+namespace+"-"+name, cmd)
}
