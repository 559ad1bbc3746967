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
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What the release (hack/release.sh, run by hack/cluster/install.sh) writes.
const (
	releaseFoo = "_output/release/foo-operator.yaml"
	releaseBar = "_output/release/examples/bar-operator.yaml"
	// The members' kustomize Components, relative to _output/release.
	fooMember = "foo-operator-stream"
	barMember = "examples/bar-operator-stream"
)

// overlayDir is the bench's kustomization of the stream: the release's
// stream with the members' Components.
const overlayDir = "_output/stream-bench"

// writeOverlay writes the kustomization of the stream with the members
// named, as a user does (test/knative's streamOverlay).
func writeOverlay(members ...string) error {
	if err := os.MkdirAll(overlayDir, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", overlayDir, err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../release/operator-stream\ncomponents:\n"
	for _, m := range members {
		k += "- ../release/" + m + "\n"
	}
	if err := os.WriteFile(filepath.Join(overlayDir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return fmt.Errorf("writing the stream's kustomization: %w", err)
	}
	return nil
}

// streamWatches tells whether the stream's ApiServerSource exists and
// watches objects of the kind, of apiVersion unless that is empty (false
// if it does not exist).
func streamWatches(ctx context.Context, apiVersion, kind string) (bool, error) {
	u, err := dyn.Resource(sourceGVR).Namespace(streamNS).Get(ctx, "operators", metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the stream's ApiServerSource: %w", err)
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "spec", "resources")
	for _, r := range resources {
		if r, _ := r.(map[string]any); r["kind"] == kind && (apiVersion == "" || r["apiVersion"] == apiVersion) {
			return true, nil
		}
	}
	return false, nil
}

// ensureDirect puts the Foo operator in direct wiring for phase 1. A run
// before this one left it on the stream: it is taken back as a user does
// (test/knative's backToDirect): its release applied again (its own
// ApiServerSource back), its Component taken out of the stream's
// kustomization, applied again, and its Triggers and ClusterRole deleted.
// The stream stays, with the Bar operator on it if it was. It returns what
// it did, for the results.
func ensureDirect(ctx context.Context) (string, error) {
	onStream, err := streamWatches(ctx, "", "Foo")
	if err != nil {
		return "", err
	}
	_, err = dyn.Resource(sourceGVR).Namespace(fooSystem).Get(ctx, "foos", metav1.GetOptions{})
	ownSource := err == nil
	if !onStream && ownSource {
		return "", nil
	}
	logf("the Foo operator is not in direct wiring (a run before left it on the stream): back to direct wiring")
	if err := kubectl("apply", "-f", releaseFoo); err != nil {
		return "", err
	}
	if !onStream {
		return "Phase 1 began with Foo's own ApiServerSource missing: the release was applied again.", nil
	}
	if err := writeOverlay(barMember); err != nil {
		return "", err
	}
	if err := kubectl("apply", "-k", overlayDir); err != nil {
		return "", err
	}
	if err := kubectl("-n", streamNS, "delete", "trigger", "-l", "app.kubernetes.io/part-of=foo-operator"); err != nil {
		return "", err
	}
	if err := kubectl("delete", "--ignore-not-found", "clusterrole", "foo-operator-stream"); err != nil {
		return "", err
	}
	return "Phase 1 began with the Foo operator on the stream (a run before left it so): it was taken back to direct wiring; " +
		"the stream, and the Bar operator if it was on it, stayed, their pods running beside phase 1 and not counted in its rows.", nil
}

// installBar applies the example Bar operator's release and waits until
// its Knative Service is Ready.
func installBar(ctx context.Context) error {
	if err := kubectl("apply", "-f", releaseBar); err != nil {
		return err
	}
	return poll(ctx, time.Second, 5*time.Minute, "the Bar operator's Service Ready", func(ctx context.Context) (bool, error) {
		return ready(ctx, ksvcGVR, barSystem, barReconciler.name)
	})
}

// switchToStream puts both operators on the shared stream as the Knative
// suite does (TestBrokerWiring): the stream's kustomization with both
// Components applied, the Broker and the stream's source Ready, the
// operators' own ApiServerSources deleted; then it waits until the stream's
// adapter is the only one in the cluster and delivers.
func switchToStream(ctx context.Context) error {
	if err := writeOverlay(fooMember, barMember); err != nil {
		return err
	}
	if err := kubectl("apply", "-k", overlayDir); err != nil {
		return err
	}
	err := poll(ctx, time.Second, 5*time.Minute, "the Broker Ready", func(ctx context.Context) (bool, error) {
		return ready(ctx, brokerGVR, streamNS, "operators")
	})
	if err != nil {
		return err
	}
	err = poll(ctx, time.Second, 5*time.Minute, "the stream's ApiServerSource Ready, sending to the Broker", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(sourceGVR).Namespace(streamNS).Get(ctx, "operators", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		sink, _, _ := unstructured.NestedString(u.Object, "status", "sinkUri")
		return readyOf(u) && strings.Contains(sink, "broker-ingress"), nil
	})
	if err != nil {
		return err
	}
	err = poll(ctx, time.Second, 5*time.Minute, "the dead-letter Service Ready", func(ctx context.Context) (bool, error) {
		return ready(ctx, ksvcGVR, deadLetters.ns, deadLetters.name)
	})
	if err != nil {
		return err
	}
	// The operators' own adapters go: the stream's replaces them.
	for _, own := range [][2]string{{fooSystem, "foos"}, {barSystem, "bars"}} {
		if err := kubectl("-n", own[0], "delete", "--ignore-not-found", "apiserversource", own[1]); err != nil {
			return err
		}
	}
	return delivers(ctx, streamWiring)
}
