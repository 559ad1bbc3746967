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

package resync

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/logging"
	pkgreconciler "knative.dev/pkg/reconciler"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/internal/snapshot"
)

// Kinds are what a resync lists.
type Kinds struct {
	// Owner is the owners' resource.
	Owner schema.GroupVersionResource
	// Owned are the resources of the objects owners own, or read.
	Owned []Owned
}

// Owned is a resource of objects that owners own.
type Owned struct {
	Resource schema.GroupVersionResource
	// OwnerLabel is the label that holds, on each such object, the name of
	// the owner (of its namespace) that owns it.
	OwnerLabel string
}

// PageSize is how many owners a resync holds at once.
const PageSize = 500

// ownedPageSize is the limit of a LIST of owned objects: above PageSize, so
// that the owned objects of a page of owners that each own one come in one
// LIST (at the limit, the API server answers with a continue token, and a
// second, empty, page).
const ownedPageSize = 4 * PageSize

// Resync finds the owners whose reconcile would write, by running the
// reconciler itself over what it lists, with its writes refused: no
// predicate to restate what the reconcile would change, and none to drift
// from it.
//
// It lists the owners a page of PageSize at a time and, for each page, the
// owned objects of each Owned resource labelled with the page's owners'
// names (one LIST with a set selector, itself paged). Then it reconciles
// each owner of the page over those objects: what the reconcile reads of
// them is answered from the lists; what else it reads (an object that is
// not labelled, another resource) is read from the API server; what it
// writes is refused and marks the owner as needing work. At steady state a
// resync costs a LIST per page of owners and per Owned resource, and writes
// nothing; it holds a page of owners and their owned objects at most.
type Resync struct {
	kinds  Kinds
	client *http.Client
	base   *url.URL
	// One resync at a time: they share the snapshot and the dry runs.
	mu   sync.Mutex
	snap *snapshot.Snapshot
	// dry are the reconcilers of the dry runs, one a core: each reconciles
	// an owner at a time.
	dry []*dryRun
}

// dryRun is a reconciler over the snapshot, and the writes it tried.
type dryRun struct {
	reconciler controller.Reconciler
	writes     atomic.Int64
}

// New returns the Resync of kinds through cfg. newReconciler returns the
// operator's reconciler for the dry runs: ctx holds the injection clients
// (injection.Default's) made for them, a logger that logs nothing and an
// event recorder that records nothing; the reconciler must use no other
// client.
func New(ctx context.Context, cfg *rest.Config, kinds Kinds, newReconciler func(ctx context.Context) controller.Reconciler) (*Resync, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	r := &Resync{kinds: kinds, client: client, base: base, snap: snapshot.New()}
	ctx = logging.WithLogger(ctx, zap.NewNop().Sugar())
	for range min(runtime.GOMAXPROCS(0), maxDryRuns) {
		d, err := r.newDryRun(ctx, cfg, newReconciler)
		if err != nil {
			return nil, err
		}
		r.dry = append(r.dry, d)
	}
	return r, nil
}

// maxDryRuns bounds the dry runs at once.
const maxDryRuns = 4

// newDryRun returns a reconciler whose clients go through the snapshot.
func (r *Resync) newDryRun(ctx context.Context, cfg *rest.Config, newReconciler func(ctx context.Context) controller.Reconciler) (*dryRun, error) {
	d := &dryRun{}
	dry := rest.CopyConfig(cfg)
	// The snapshot answers JSON, and at once: no rate limit.
	dry.ContentType, dry.AcceptContentTypes = "application/json", "application/json"
	dry.QPS, dry.RateLimiter = -1, nil
	used := false
	dry.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		used = true
		return r.snap.Over(rt, &d.writes)
	})
	for _, inject := range injection.Default.GetClients() {
		ctx = inject(ctx, dry)
	}
	d.reconciler = newReconciler(controller.WithEventRecorder(ctx, &record.FakeRecorder{}))
	if !used {
		return nil, fmt.Errorf("no injection client was made for the resync's dry runs")
	}
	// Promoted as controller.Impl promotes the served one without leader
	// election: with no enqueue function, so that the generated reconciler
	// lists nothing.
	if la, ok := d.reconciler.(pkgreconciler.LeaderAware); ok {
		if err := la.Promote(pkgreconciler.UniversalBucket(), nil); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// KeysNeedingWork returns the owners whose reconcile would write (work),
// and those whose reconcile ends in a permanent error or a requeue without
// writing (refused: a reconcile changes nothing for them until something
// else changes, a name another owner frees, say, or until their time). The keys of work are to be
// reconciled from fresh reads. It looks at the owners of every namespace,
// or, if namespaces are given, at those of these namespaces only (a LIST
// of each: cheaper than one of every namespace when the rest of the
// cluster holds many owners).
func (r *Resync) KeysNeedingWork(ctx context.Context, namespaces ...string) (work, refused []types.NamespacedName, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.snap.Reset()
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	dryCtx := logging.WithLogger(ctx, zap.NewNop().Sugar())
	for _, ns := range namespaces {
		for cont := ""; ; {
			owners, next, err := r.list(ctx, r.kinds.Owner, ns, "", "", cont, PageSize)
			if err != nil {
				return nil, nil, fmt.Errorf("failed to list owners: %w", err)
			}
			if err := r.listOwned(ctx, ns, owners); err != nil {
				return nil, nil, err
			}
			w, rf := r.dryRuns(dryCtx, owners)
			work, refused = append(work, w...), append(refused, rf...)
			r.snap.Reset()
			if next == "" {
				break
			}
			cont = next
		}
	}
	sortKeys(work)
	sortKeys(refused)
	return work, refused, nil
}

// dryRuns reconciles each owner over the snapshot, and returns those whose
// reconcile tried to write or failed (work), and those refused with a
// permanent error or a requeue.
func (r *Resync) dryRuns(ctx context.Context, owners []types.NamespacedName) (work, refused []types.NamespacedName) {
	keys := make(chan types.NamespacedName)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, d := range r.dry {
		wg.Go(func() {
			for key := range keys {
				before := d.writes.Load()
				err := d.reconciler.Reconcile(ctx, key.String())
				mu.Lock()
				switch {
				case d.writes.Load() > before, err != nil && !changesNothing(err):
					work = append(work, key)
				case err != nil:
					refused = append(refused, key)
				}
				mu.Unlock()
			}
		})
	}
	for _, key := range owners {
		keys <- key
	}
	close(keys)
	wg.Wait()
	return work, refused
}

func sortKeys(keys []types.NamespacedName) {
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
}

// listOwned puts in the snapshot the objects that owners own (of namespace,
// or of every namespace if it is empty).
func (r *Resync) listOwned(ctx context.Context, namespace string, owners []types.NamespacedName) error {
	names := map[string]bool{}
	for _, o := range owners {
		if len(validation.IsValidLabelValue(o.Name)) == 0 {
			names[o.Name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	values := make([]string, 0, len(names))
	for n := range names {
		values = append(values, n)
	}
	for _, owned := range r.kinds.Owned {
		req, err := labels.NewRequirement(owned.OwnerLabel, selection.In, values)
		if err != nil {
			return fmt.Errorf("bad owner label of %s: %w", owned.Resource, err)
		}
		sel := labels.NewSelector().Add(*req).String()
		for cont := ""; ; {
			_, next, err := r.list(ctx, owned.Resource, namespace, owned.OwnerLabel, sel, cont, ownedPageSize)
			if err != nil {
				return fmt.Errorf("failed to list %s: %w", owned.Resource.Resource, err)
			}
			if next == "" {
				break
			}
			cont = next
		}
		for _, o := range owners {
			if names[o.Name] {
				r.snap.HoldsOwnedBy(owned.Resource, o)
			}
		}
	}
	return nil
}

// list lists a page of resource (of namespace, or of every namespace if it
// is empty; its objects labelled with their owner's name by ownerLabel, if
// any) into the snapshot, and returns the keys listed and the next page's
// continue token.
func (r *Resync) list(ctx context.Context, resource schema.GroupVersionResource, namespace, ownerLabel, selector, cont string, limit int) ([]types.NamespacedName, string, error) {
	u := *r.base
	group := path.Join("apis", resource.Group, resource.Version)
	if resource.Group == "" {
		group = path.Join("api", resource.Version)
	}
	u.Path = path.Join(u.Path, group)
	if namespace != "" {
		u.Path = path.Join(u.Path, "namespaces", namespace)
	}
	u.Path = path.Join(u.Path, resource.Resource)
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if selector != "" {
		q.Set("labelSelector", selector)
	}
	if cont != "" {
		q.Set("continue", cont)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var page struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ListMeta   `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, "", err
	}
	gv, err := schema.ParseGroupVersion(page.APIVersion)
	if err != nil {
		return nil, "", err
	}
	r.snap.Kind(resource, gv.WithKind(strings.TrimSuffix(page.Kind, "List")), ownerLabel)
	keys := make([]types.NamespacedName, 0, len(page.Items))
	for _, raw := range page.Items {
		key, err := r.snap.Add(resource, raw)
		if err != nil {
			return nil, "", err
		}
		keys = append(keys, key)
	}
	return keys, page.Metadata.Continue, nil
}

// changesNothing tells whether a reconcile that wrote nothing and failed so
// changes nothing until something else does: a permanent error, or a
// requeue (the requeue schedule runs the key again at its time).
func changesNothing(err error) bool {
	requeue, _ := controller.IsRequeueKey(err)
	return requeue || controller.IsPermanentError(err)
}
