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
	"context"
	"errors"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/tracker"
)

// configs is a Configs of namespace system that watches config-logging and
// records the reloads.
type configs struct {
	reloaded []string
	err      error
}

func (c *configs) Namespace() string { return "system" }

func (c *configs) Watches(name string) bool { return name == "config-logging" }

func (c *configs) Reload(_ context.Context, name string) (bool, error) {
	if name != "config-logging" {
		return false, nil
	}
	c.reloaded = append(c.reloaded, name)
	return true, c.err
}

// configMapEvent is a Resource-mode event of ConfigMap ns/name.
func configMapEvent(verb, ns, name string) cloudevents.Event {
	return adapterEvent("resource", verb, "v1", "ConfigMap", "configmaps", ns, name, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "c-" + name},
		"data":     map[string]any{"loglevel.controller": "debug"},
	})
}

// An event of a watched ConfigMap of the system namespace, in either mode
// and whatever happened to it, has it applied, then asks for a resync;
// other ConfigMaps' events are ignored, unread.
func TestAConfigMapsEventAppliesItThenResyncs(t *testing.T) {
	tests := []struct {
		name     string
		event    cloudevents.Event
		reloaded bool
	}{
		{"changed", configMapEvent("update", "system", "config-logging"), true},
		{"made", configMapEvent("add", "system", "config-logging"), true},
		{"deleted: its default applies", configMapEvent("delete", "system", "config-logging"), true},
		{"reference mode", refEvent("update", "v1", "ConfigMap", "configmaps", "system", "config-logging"), true},
		{"not watched", configMapEvent("update", "system", "config-other"), false},
		{"another namespace", configMapEvent("update", "other", "config-logging"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			c := &configs{}
			d.Configs = c
			target, err := decodeAndResolve(d, &tc.event, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(c.reloaded) == 1; got != tc.reloaded {
				t.Errorf("reloaded %v, want reloaded %v", c.reloaded, tc.reloaded)
			}
			if target.Resync != tc.reloaded || (target.Ignored != "") == tc.reloaded || len(target.Keys) != 0 {
				t.Errorf("target %+v, want a resync only when the ConfigMap was applied, else ignored", target)
			}
		})
	}
}

// A ConfigMap that cannot be applied (the API server unreachable, or it was
// deleted and has no default) is an error: the event comes again.
func TestAConfigMapNotAppliedIsAnError(t *testing.T) {
	d, _ := newDecoder()
	d.Configs = &configs{err: errors.New("unreachable")}
	e := configMapEvent("update", "system", "config-logging")
	if _, err := decodeAndResolve(d, &e, Sender{}); err == nil || IsBadEvent(err) {
		t.Errorf("error %v, want a transient one", err)
	}
}

// Without Configs, a ConfigMap is a kind like any other: not handled.
func TestConfigMapsWithoutConfigs(t *testing.T) {
	d, _ := newDecoder()
	e := configMapEvent("update", "system", "config-logging")
	target, err := decodeAndResolve(d, &e, Sender{})
	if err != nil || target.Ignored == "" || target.Resync {
		t.Errorf("target %+v, %v; want it ignored", target, err)
	}
}

// A ConfigMap of the system namespace that the parts do not watch is not
// taken for configuration: if owners track it, they are reconciled.
func TestATrackedConfigMapIsNotTakenForConfiguration(t *testing.T) {
	tr := tracker.New(func(types.NamespacedName) {}, time.Hour)
	ref := tracker.Reference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "system", Name: "config-other"}
	if err := tr.TrackReference(ref, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	d, _ := newDecoder()
	c := &configs{}
	d.Configs, d.Tracked = c, []schema.GroupKind{configMapKind}
	d.Observers = func(obj *metav1.PartialObjectMetadata) []types.NamespacedName { return tr.GetObservers(obj) }
	d.Listed(nil)

	e := configMapEvent("update", "system", "config-other")
	target, err := decodeAndResolve(d, &e, Sender{})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(target.Keys, key("ns", "a")) || target.Resync || len(c.reloaded) != 0 {
		t.Errorf("target %+v, reloaded %v; want ns/a reconciled, nothing reloaded", target, c.reloaded)
	}
	e = configMapEvent("update", "system", "config-logging")
	if target, err = decodeAndResolve(d, &e, Sender{}); err != nil || !target.Resync || len(c.reloaded) != 1 {
		t.Errorf("target %+v, %v, reloaded %v; want config-logging reloaded and a resync", target, err, c.reloaded)
	}
}
