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

package receiver

import (
	"encoding/json"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/uuid"
)

// The shapes of the real ApiServerSource adapter's events (see
// ../shared/CONTROL-PLANE.md): source is the API server URL, subject the
// object's path, id a random UUID, extensions kind, name, namespace and
// apiversion.

const (
	fooAPIVersion = "samplecontroller.knative.io/v1alpha1"
	apiServerURL  = "https://127.0.0.1:26443"
)

func adapterEvent(mode, verb, apiVersion, kind, plural, ns, name string, data any) cloudevents.Event {
	e := cloudevents.NewEvent()
	e.SetID(uuid.NewString())
	e.SetType("dev.knative.apiserver." + mode + "." + verb)
	e.SetSource(apiServerURL)
	prefix := "/apis/" + apiVersion
	if apiVersion == "v1" {
		prefix = "/api/v1"
	}
	e.SetSubject(fmt.Sprintf("%s/namespaces/%s/%s/%s", prefix, ns, plural, name))
	e.SetExtension("kind", kind)
	e.SetExtension("name", name)
	e.SetExtension("namespace", ns)
	e.SetExtension("apiversion", apiVersion)
	if err := e.SetData(cloudevents.ApplicationJSON, data); err != nil {
		panic(err)
	}
	return e
}

// fooResourceEvent is a Resource-mode event for a Foo: data is the object.
func fooResourceEvent(verb, ns, name string) cloudevents.Event {
	return adapterEvent("resource", verb, fooAPIVersion, "Foo", "foos", ns, name, map[string]any{
		"apiVersion": fooAPIVersion,
		"kind":       "Foo",
		"metadata":   map[string]any{"name": name, "namespace": ns, "uid": "u-" + name, "generation": 1},
		"spec":       map[string]any{"deploymentName": name, "replicas": 1},
	})
}

// refEvent is a Reference-mode event: data is {kind, namespace, name, apiVersion}.
func refEvent(verb, apiVersion, kind, plural, ns, name string) cloudevents.Event {
	return adapterEvent("ref", verb, apiVersion, kind, plural, ns, name, map[string]any{
		"kind": kind, "namespace": ns, "name": name, "apiVersion": apiVersion,
	})
}

// deploymentResourceEvent is a Resource-mode event for a Deployment
// controlled by the Foo named owner ("" for none).
func deploymentResourceEvent(verb, ns, name, owner string) cloudevents.Event {
	meta := map[string]any{"name": name, "namespace": ns, "uid": "d-" + name}
	if owner != "" {
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion": fooAPIVersion, "kind": "Foo", "name": owner, "uid": "u-" + owner,
			"controller": true, "blockOwnerDeletion": true,
		}}
	}
	return adapterEvent("resource", verb, "apps/v1", "Deployment", "deployments", ns, name, map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
		"spec": map[string]any{"replicas": 1},
	})
}

// adapterPodEvent is a Resource-mode event for the pod of the source foos's
// adapter (labelled as Eventing does, if labelled) whose condition Ready has
// the given status ("" for none).
func adapterPodEvent(verb, ready string, labelled bool) cloudevents.Event {
	status := map[string]any{}
	if ready != "" {
		status["conditions"] = []any{
			map[string]any{"type": "ContainersReady", "status": ready},
			map[string]any{"type": "Ready", "status": ready},
		}
	}
	meta := map[string]any{"name": "apiserversource-foos-1234-x7k2p", "namespace": "foo-operator"}
	if labelled {
		meta["labels"] = map[string]any{AdapterLabel: AdapterLabelValue, "eventing.knative.dev/sourceName": "foos"}
	}
	return adapterEvent("resource", verb, "v1", "Pod", "pods", "foo-operator", "apiserversource-foos-1234-x7k2p", map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status,
	})
}

// pingEvent is PingSource's event.
func pingEvent() cloudevents.Event {
	e := cloudevents.NewEvent()
	e.SetID(uuid.NewString())
	e.SetType(PingEventType)
	e.SetSource("/apis/v1/namespaces/foo-operator/pingsources/foo-resync")
	_ = e.SetData(cloudevents.ApplicationJSON, json.RawMessage(`{"resync":true}`))
	return e
}
