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

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// churnStep is what one namespace made (or deleted) cost on the shared
// stream: Eventing writes the namespace list into the adapter's
// environment, so the adapter rolls, and its new pod, once ready, asks every
// member for a resync.
type churnStep struct {
	// AdapterSeconds: from the request until the adapter's Deployment has
	// rolled out with the namespace in (out of) its configuration.
	AdapterSeconds float64 `json:"adapterSeconds"`
	// Wakes are the members' wake-ups, measured as the pings' are.
	Wakes []pingWake `json:"wakes"`
}

// namespaceChurn is one namespace made, then deleted.
type namespaceChurn struct {
	Made    churnStep `json:"made"`
	Deleted churnStep `json:"deleted"`
}

// churnNamespace makes a namespace, then deletes it, with the members at
// zero, and measures each step.
func churnNamespace(ctx context.Context, members ...knativeService) (*namespaceChurn, error) {
	name := "bench-churn-" + strconv.FormatInt(time.Now().Unix(), 36)
	c := &namespaceChurn{}
	var err error
	c.Made, err = churn(ctx, "made", name, true, members, func() error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return c, err
	}
	c.Deleted, err = churn(ctx, "deleted", name, false, members, func() error {
		return kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return c, err
}

// churnStep1 waits until the members are at zero, does what changes the
// namespace, and times the adapter's rollout and the members' wake-ups.
func churn(ctx context.Context, what, name string, listed bool, members []knativeService, do func() error) (churnStep, error) {
	var s churnStep
	if err := gone(ctx, 10*time.Minute, members...); err != nil {
		return s, err
	}
	logf("  namespace %s %s", name, what)
	start := time.Now()
	if err := do(); err != nil {
		return s, fmt.Errorf("namespace %s %s: %w", name, what, err)
	}
	err := poll(ctx, 250*time.Millisecond, 5*time.Minute, "the stream's adapter rolled out with namespace "+name+" "+what, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(streamNS).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil || len(d.Items) != 1 {
			return false, nil
		}
		return rolledOut(&d.Items[0]) && listsAll(&d.Items[0], []string{name}) == listed, nil
	})
	if err != nil {
		return s, err
	}
	s.AdapterSeconds = time.Since(start).Seconds()
	s.Wakes, err = wakesOf(ctx, start, members)
	names := make([]string, len(s.Wakes))
	for i, w := range s.Wakes {
		names[i] = fmt.Sprintf("%s a pod for %.1f s", w.Service, w.PodSeconds)
	}
	logf("  adapter rolled out in %.1f s; %s", s.AdapterSeconds, strings.Join(names, ", "))
	return s, err
}
