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

package knative

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// upgraded is the namespace of the Foos that live through the upgrade.
const upgraded = "e2e-upgrade"

// previousRelease is the release of the previous commit (installPrevious).
const previousRelease = "_output/release-previous/foo-operator.yaml"

// installPrevious makes the previous commit's release, from a worktree of
// it, with that commit's own hack/release.sh, and applies it.
func installPrevious() error {
	start := time.Now()
	dir, err := os.MkdirTemp("", "foo-operator-previous-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	worktree := filepath.Join(dir, "tree")
	if err := git("worktree", "add", "--detach", worktree, "HEAD~1"); err != nil {
		return err
	}
	defer func() { _ = git("worktree", "remove", "--force", worktree) }()
	ko, err := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), "--path", "ko").Output()
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(worktree, "hack", "release.sh"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = worktree, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "OUT="+filepath.Join(root, filepath.Dir(previousRelease)), "KO="+strings.TrimSpace(string(ko)),
		"KO_DOCKER_REPO=localhost:5000/foo-operator", "KO_DEFAULTBASEIMAGE=localhost:5000/base:static")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the previous commit's hack/release.sh: %w", err)
	}
	if err := kubectl("apply", "-f", previousRelease); err != nil {
		return err
	}
	fmt.Printf("knative: the previous commit's release made and applied in %v\n", time.Since(start).Round(time.Millisecond))
	return clustertest.Poll(3*time.Minute, "the previous release's Service is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, system, service)
	})
}

func git(args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// The Foos made under the previous release, and those made or changed while
// this one rolls out.
var (
	beforeTheUpgrade = []string{"kept-1", "kept-2", "changed"}
	duringTheUpgrade = []string{"new"}
)

// foosBeforeTheUpgrade makes Foos under the previous release, and waits
// until it has reconciled them. The adapters of a new install send nothing
// for what they did not watch yet: until they do, the Foos are poked (an
// annotation: an update of a Foo never reconciled is reconciled).
func foosBeforeTheUpgrade() error {
	// Whatever sources that release has.
	if err := clustertest.Poll(3*time.Minute, "the ApiServerSources are Ready", func(ctx context.Context) (bool, string) {
		list, err := dyn.Resource(sourceGVR).Namespace(system).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("%d sources, %v", len(list.Items), err)
		}
		for _, s := range list.Items {
			if ok, msg := ready(ctx, sourceGVR, system, s.GetName()); !ok {
				return false, s.GetName() + ": " + msg
			}
		}
		return true, ""
	}); err != nil {
		return err
	}
	ctx := context.Background()
	for _, name := range beforeTheUpgrade {
		if _, err := foos.SamplecontrollerV1alpha1().Foos(upgraded).Create(ctx, newFoo(upgraded, name, name, 1), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	poked, pokes := time.Now(), 0
	return clustertest.Poll(5*time.Minute, "the previous release reconciled the Foos", func(ctx context.Context) (bool, string) {
		ok, msg := converged(ctx, upgraded, len(beforeTheUpgrade))
		if !ok && time.Since(poked) > 20*time.Second {
			poked, pokes = time.Now(), pokes+1
			for _, name := range beforeTheUpgrade {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e-poke":"%d"}}}`, pokes)
				_, _ = foos.SamplecontrollerV1alpha1().Foos(upgraded).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			}
		}
		return ok, msg
	})
}

// foosDuringTheUpgrade makes a Foo and changes one right after this release
// was applied, while its revision rolls out.
func foosDuringTheUpgrade() error {
	ctx := context.Background()
	for _, name := range duringTheUpgrade {
		if _, err := foos.SamplecontrollerV1alpha1().Foos(upgraded).Create(ctx, newFoo(upgraded, name, name, 1), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	_, err := foos.SamplecontrollerV1alpha1().Foos(upgraded).Patch(ctx, "changed", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
	return err
}

// Upgrading from the previous commit's release (kubectl apply of this one
// over it, in TestMain) keeps every Foo: those made before are still Ready
// with their Deployments, and those made or changed during the rollout
// converge, under this release's reconciler.
func TestUpgradeKeepsEveryFoo(t *testing.T) {
	image := releaseImage(t)
	clustertest.Eventually(t, 3*time.Minute, "the Service runs this release's image", func(ctx context.Context) (bool, string) {
		u, err := dyn.Resource(ksvcGVR).Namespace(system).Get(ctx, service, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		got := ""
		if len(containers) == 1 {
			got, _ = containers[0].(map[string]any)["image"].(string)
		}
		ok, msg := ready(ctx, ksvcGVR, system, service)
		return ok && got == image, fmt.Sprintf("image %s, %s", got, msg)
	})
	// A release that changes the sources rolls their adapters, which send
	// nothing for what changed before they watch: the resync that the new
	// adapter's pod asks for (receiver.AdapterLabel) converges those Foos, or the
	// cold start's.
	for _, name := range append(beforeTheUpgrade, duringTheUpgrade...) {
		want := int32(1)
		if name == "changed" {
			want = 2
		}
		availableWithin(t, 6*time.Minute, upgraded, name, want)
	}
}

// releaseImage is the reconciler's image in this release's YAML.
func releaseImage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, release))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if image, ok := strings.CutPrefix(strings.TrimSpace(l), "image: "); ok && strings.Contains(image, "foo-reconciler") {
			return image
		}
	}
	t.Fatalf("%s names no reconciler image", release)
	return ""
}

// The README's uninstall that keeps every Foo: `kubectl delete -f` of the
// release with the selector leaves the CRD and the aggregated roles, and
// takes everything else. Asked of the API server as a dry run, so that the
// suite's install stays.
func TestUninstallWithTheSelectorKeepsTheCRD(t *testing.T) {
	deleted := func(args ...string) map[string]bool {
		t.Helper()
		cmd := exec.Command(tool("kubectl"), append([]string{"--kubeconfig", kubeconfig, "delete", "-f", release, "--dry-run=server", "-o", "name"}, args...)...)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl delete -f %s %v --dry-run=server: %v", release, args, err)
		}
		names := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				names[f[0]] = true
			}
		}
		return names
	}
	kept := []string{
		"customresourcedefinition.apiextensions.k8s.io/foos.samplecontroller.knative.io",
		"clusterrole.rbac.authorization.k8s.io/foo-operator-edit",
		"clusterrole.rbac.authorization.k8s.io/foo-operator-view",
	}
	gone := []string{"namespace/" + system, "service.serving.knative.dev/" + service}
	all := deleted()
	for _, name := range append(kept, gone...) {
		if !all[name] {
			t.Fatalf("kubectl delete -f %s would not delete %s; it would delete %v", release, name, all)
		}
	}
	selected := deleted("--selector", "app.kubernetes.io/component!=api")
	for _, name := range kept {
		if selected[name] {
			t.Errorf("with the selector, kubectl delete would delete %s", name)
		}
	}
	for _, name := range gone {
		if !selected[name] {
			t.Errorf("with the selector, kubectl delete would keep %s", name)
		}
	}
	if len(selected) != len(all)-len(kept) {
		t.Errorf("with the selector, kubectl delete would delete %d objects, want all %d but the %d kept: %v", len(selected), len(all), len(kept), selected)
	}
}
