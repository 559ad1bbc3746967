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

package configwatch

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"knative.dev/eventing/pkg/apis/feature"
	logtesting "knative.dev/pkg/logging/testing"
)

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: name}, Data: data}
}

// Each ConfigMap watched is read at Start, its default standing in for it
// if it does not exist, and each observer gets it.
func TestStart(t *testing.T) {
	w := New(fake.NewClientset(configMap("config-mine", map[string]string{"k": "v"})).CoreV1(), "system")
	got := map[string]*corev1.ConfigMap{}
	seen := func(cm *corev1.ConfigMap) { got[cm.Name+" "+cm.Namespace] = cm }
	w.Watch("config-mine", seen, seen)
	w.WatchWithDefault(*configMap("config-logging", map[string]string{"loglevel.x": "info"}), seen)
	w.WatchWithDefault(corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-absent"}}, seen)
	if err := w.Start(nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["config-mine system"].Data["k"] != "v" || got["config-logging system"].Data["loglevel.x"] != "info" ||
		got["config-absent system"] == nil {
		t.Errorf("observed %v, want config-mine as it is, config-logging and config-absent by their defaults, in namespace system", got)
	}
}

// A ConfigMap watched with no default that does not exist, or no namespace
// to read it in, fails Start with a message that names it.
func TestStartRefuses(t *testing.T) {
	for _, tc := range []struct {
		namespace, want string
	}{
		{"system", "ConfigMap system/config-mine is watched with no default, and does not exist"},
		{"", `ConfigMap "config-mine" is watched, but no system namespace is set`},
	} {
		w := New(fake.NewClientset().CoreV1(), tc.namespace)
		w.Watch("config-mine", func(*corev1.ConfigMap) { t.Error("observer called") })
		if err := w.Start(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("namespace %q: Start = %v, want %q", tc.namespace, err, tc.want)
		}
	}
	if err := New(fake.NewClientset().CoreV1(), "").Start(nil); err != nil {
		t.Errorf("nothing watched, no namespace: Start = %v", err)
	}
}

// An observer added after Start would never be called: Watch panics.
func TestWatchAfterStart(t *testing.T) {
	w := New(fake.NewClientset().CoreV1(), "system")
	if err := w.Start(nil); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Watch after Start did not panic")
		}
	}()
	w.Watch("config-late")
}

// Eventing's feature store, as its ContainerSource controller uses it, gets
// config-features at Start and puts it in each reconcile's context.
func TestFeatureStore(t *testing.T) {
	w := New(fake.NewClientset(configMap(feature.FlagsConfigName, map[string]string{"transport-encryption": "strict"})).CoreV1(), "system")
	store := feature.NewStore(logtesting.TestLogger(t))
	store.WatchConfigs(w)
	if err := w.Start(nil); err != nil {
		t.Fatal(err)
	}
	if flags := feature.FromContext(store.ToContext(context.Background())); !flags.IsStrictTransportEncryption() {
		t.Errorf("flags %v, want transport-encryption strict", flags)
	}
}

// Reload reads a ConfigMap watched again: its change, then its default once
// it is deleted, reach every observer; one not watched, or before Start, is
// not read.
func TestReload(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(configMap("config-logging", map[string]string{"loglevel.x": "debug"}))
	w := New(client.CoreV1(), "system")
	var got []string
	w.WatchWithDefault(*configMap("config-logging", map[string]string{"loglevel.x": "info"}),
		func(cm *corev1.ConfigMap) { got = append(got, "a:"+cm.Data["loglevel.x"]) },
		func(cm *corev1.ConfigMap) { got = append(got, "b:"+cm.Data["loglevel.x"]) })
	if watched, err := w.Reload(ctx, "config-logging"); watched || err != nil {
		t.Errorf("Reload before Start = %v, %v; want false, nil", watched, err)
	}
	if !w.Watches("config-logging") || w.Watches("config-other") {
		t.Error("Watches: want config-logging only")
	}
	if err := w.Start(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("system").Update(ctx, configMap("config-logging", map[string]string{"loglevel.x": "warn"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if watched, err := w.Reload(ctx, "config-logging"); !watched || err != nil {
		t.Errorf("Reload = %v, %v; want true, nil", watched, err)
	}
	if err := client.CoreV1().ConfigMaps("system").Delete(ctx, "config-logging", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Reload(ctx, "config-logging"); err != nil {
		t.Error(err)
	}
	if watched, err := w.Reload(ctx, "config-other"); watched || err != nil {
		t.Errorf("Reload of a ConfigMap not watched = %v, %v; want false, nil", watched, err)
	}
	if want := "a:debug b:debug a:warn b:warn a:info b:info"; strings.Join(got, " ") != want {
		t.Errorf("observed %q, want %q", strings.Join(got, " "), want)
	}
}

// A ConfigMap with no default, deleted, is an error; its observers keep
// what they had.
func TestReloadOfADeletedConfigMapWithNoDefault(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(configMap("config-mine", map[string]string{"k": "v"}))
	w := New(client.CoreV1(), "system")
	calls := 0
	w.Watch("config-mine", func(*corev1.ConfigMap) { calls++ })
	if err := w.Start(nil); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps("system").Delete(ctx, "config-mine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Reload(ctx, "config-mine"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Reload = %v, want the ConfigMap's absence", err)
	}
	if calls != 1 {
		t.Errorf("observer called %d times, want once (at Start)", calls)
	}
}
