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
// Package configwatch is the configmap.Watcher that serverless.Main gives
// an operator's New: the ConfigMaps its parts watch, in the system
// namespace, are read from the API server when the process starts, a
// default standing in for one that does not exist; no informer watches
// them. An event of one reads it again (Reload); without events, a change
// reaches the operator with its next pod.
package configwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"knative.dev/pkg/configmap"
)

// Watcher reads the ConfigMaps watched of it once, at Start.
type Watcher struct {
	client    corev1client.ConfigMapsGetter
	namespace string

	mu        sync.Mutex
	started   bool
	observers map[string][]configmap.Observer
	defaults  map[string]*corev1.ConfigMap
}

var _ configmap.DefaultingWatcher = (*Watcher)(nil)

// New returns a Watcher of the ConfigMaps of namespace, read through client.
func New(client corev1client.ConfigMapsGetter, namespace string) *Watcher {
	return &Watcher{client: client, namespace: namespace, observers: map[string][]configmap.Observer{}, defaults: map[string]*corev1.ConfigMap{}}
}

// Watch has the observers called with the ConfigMap name at Start; it must
// exist then. Watching after Start panics: the observers would never be called.
func (w *Watcher) Watch(name string, o ...configmap.Observer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic(fmt.Sprintf("configwatch: ConfigMap %q watched after Start", name))
	}
	w.observers[name] = append(w.observers[name], o...)
}

// WatchWithDefault is Watch, with cm standing in for the ConfigMap of its
// name if that does not exist.
func (w *Watcher) WatchWithDefault(cm corev1.ConfigMap, o ...configmap.Observer) {
	w.Watch(cm.Name, o...)
	w.mu.Lock()
	defer w.mu.Unlock()
	cm.Namespace = w.namespace
	w.defaults[cm.Name] = &cm
}

// ForEach calls f with each name watched and its observers.
func (w *Watcher) ForEach(f func(string, []configmap.Observer) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, o := range w.observers {
		if err := f(name, o); err != nil {
			return err
		}
	}
	return nil
}

// Start reads each ConfigMap watched and calls its observers with it, or
// with its default; a ConfigMap with neither is an error that names it.
func (w *Watcher) Start(stop <-chan struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	for _, name := range slices.Sorted(maps.Keys(w.observers)) {
		cm, err := w.read(ctx, name)
		if err != nil {
			return err
		}
		for _, o := range w.observers[name] {
			o(cm)
		}
	}
	return nil
}

// Namespace is the namespace of the ConfigMaps watched.
func (w *Watcher) Namespace() string { return w.namespace }

// Watches tells whether the ConfigMap name is watched.
func (w *Watcher) Watches(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.observers[name]) > 0
}

// Reload reads the ConfigMap name again, or its default if it no longer
// exists, and calls its observers with it; it tells whether name is watched
// (a ConfigMap not watched, or one before Start, is not read). Reloads run
// one at a time, so the last one's read is what the observers keep. A
// ConfigMap deleted with no default is an error, and its observers keep
// what they had.
func (w *Watcher) Reload(ctx context.Context, name string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	observers := w.observers[name]
	if !w.started || len(observers) == 0 {
		return false, nil
	}
	cm, err := w.read(ctx, name)
	if err != nil {
		return true, err
	}
	for _, o := range observers {
		o(cm)
	}
	return true, nil
}

// read returns the ConfigMap name, or its default if it does not exist.
func (w *Watcher) read(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if w.namespace == "" {
		return nil, fmt.Errorf("ConfigMap %q is watched, but no system namespace is set (--system-namespace, env SYSTEM_NAMESPACE)", name)
	}
	cm, err := w.client.ConfigMaps(w.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrs.IsNotFound(err) && w.defaults[name] != nil:
		return w.defaults[name].DeepCopy(), nil
	case apierrs.IsNotFound(err):
		return nil, fmt.Errorf("ConfigMap %s/%s is watched with no default, and does not exist", w.namespace, name)
	case err != nil:
		return nil, fmt.Errorf("failed to read ConfigMap %s/%s: %w", w.namespace, name, err)
	}
	return cm, nil
}
