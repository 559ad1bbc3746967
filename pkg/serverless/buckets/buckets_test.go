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

package buckets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const buckets = 6

// keys are the keys the tests route: enough to fall into every bucket.
var keys = func() []string {
	k := make([]string, 60)
	for i := range k {
		k[i] = fmt.Sprintf("ns/foo-%02d", i)
	}
	return k
}()

// member is a running Set.
type member struct {
	*Set
	stop func() // cancels Run and waits for it to return
}

func join(t *testing.T, leases coordinationv1client.LeasesGetter, id string) *member {
	t.Helper()
	s, err := New(Config{Leases: leases, Namespace: "system", Name: "op", Buckets: buckets, Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	m := &member{Set: s, stop: sync.OnceFunc(func() { cancel(); <-done })}
	t.Cleanup(m.stop)
	return m
}

// holders returns, for each key, which members admit it now; it fails the
// test if two do.
func holders(t *testing.T, members ...*member) map[string]string {
	t.Helper()
	got := map[string]string{}
	var leaves []func()
	for _, k := range keys {
		for _, m := range members {
			leave, ok := m.Enter(k)
			if !ok {
				continue
			}
			leaves = append(leaves, leave)
			if other, dup := got[k]; dup {
				t.Fatalf("%s is admitted by %s and %s", k, other, m.Identity())
			}
			got[k] = m.Identity()
		}
	}
	for _, leave := range leaves {
		leave()
	}
	return got
}

// eventually polls cond, checking meanwhile that no key has two holders.
func eventually(t *testing.T, what string, cond func() bool, members ...*member) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		holders(t, members...)
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// runs returns how many buckets m runs an elector for.
func (m *member) runs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.own)
}

func count(h map[string]string, id string) int {
	n := 0
	for _, v := range h {
		if v == id {
			n++
		}
	}
	return n
}

func TestAloneItHoldsEveryKey(t *testing.T) {
	a := join(t, fake.NewClientset().CoordinationV1(), "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if alone := a.Settle(ctx); !alone {
		t.Error("Settle() = not alone, want alone")
	}
	if h := holders(t, a); len(h) != len(keys) {
		t.Errorf("admits %d of %d keys once settled", len(h), len(keys))
	}
	for _, k := range keys {
		if _, local := a.Route(k); !local {
			t.Fatalf("Route(%s) is not local", k)
		}
	}
}

func TestMembersShareTheBucketsAndRouteToEachOther(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	a := join(t, leases, "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Settle(ctx)
	resynced(t, leases, a)
	b := join(t, leases, "b:1")
	if alone := b.Settle(ctx); alone {
		t.Error("the second member's Settle() = alone")
	}
	eventually(t, "the keys are shared", func() bool {
		h := holders(t, a, b)
		return len(h) == len(keys) && count(h, "a:1") > 0 && count(h, "b:1") > 0
	}, a, b)
	// Each routes to the other what the other holds, once it has read so.
	h := holders(t, a, b)
	eventually(t, "routes agree with the holders", func() bool {
		for _, k := range keys {
			for _, m := range []*member{a, b} {
				addr, local := m.Route(k)
				if local != (h[k] == m.Identity()) || !local && addr != h[k] {
					return false
				}
			}
		}
		return true
	}, a, b)
	// Leases are read by name: the buckets are dealt evenly.
	if na, nb := a.runs(), b.runs(); na != buckets/2 || nb != buckets/2 {
		t.Errorf("a runs %d buckets, b %d; want %d each", na, nb, buckets/2)
	}
}

func TestALeavingMemberFinishesItsReconcilesBeforeHandingOn(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	a, b := join(t, leases, "a:1"), join(t, leases, "b:1")
	eventually(t, "the keys are shared", func() bool {
		h := holders(t, a, b)
		return len(h) == len(keys) && count(h, "a:1") > 0 && count(h, "b:1") > 0
	}, a, b)
	resynced(t, leases, a) // each started alone
	resynced(t, leases, b)
	eventually(t, "a has read that b resynced", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.resyncingMember["b:1"]
	}, a, b)
	h := holders(t, a, b)
	var key string
	for _, k := range keys {
		if h[k] == "b:1" {
			key = k
			break
		}
	}
	leave, ok := b.Enter(key)
	if !ok {
		t.Fatal("b does not admit", key)
	}
	go b.stop()
	defer func() {
		select {
		case <-a.TakenOver():
			t.Error("a took over from b, which left cleanly")
		default:
		}
	}()
	// While b's reconcile of key runs, a never gets the key.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if l, ok := a.Enter(key); ok {
			l()
			t.Fatalf("a admits %s while b still reconciles it", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
	leave()
	eventually(t, "a holds every key once b has gone", func() bool { return count(holders(t, a), "a:1") == len(keys) }, a)
	if _, err := leases.Leases("system").Get(context.Background(), b.member, metav1.GetOptions{}); err == nil {
		t.Error("b's member Lease is still there")
	}
}

func TestAJoiningMemberGetsItsShare(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	a := join(t, leases, "a:1")
	eventually(t, "a holds every key", func() bool { return count(holders(t, a), "a:1") == len(keys) }, a)
	b := join(t, leases, "b:1")
	c := join(t, leases, "c:1")
	eventually(t, "three members share the keys", func() bool {
		h := holders(t, a, b, c)
		return len(h) == len(keys) && a.runs() == 2 && b.runs() == 2 && c.runs() == 2
	}, a, b, c)
}

func TestNewRefusesBadConfig(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	for name, cfg := range map[string]Config{
		"no buckets":  {Leases: leases, Namespace: "s", Name: "op", Identity: "a:1"},
		"no identity": {Leases: leases, Namespace: "s", Name: "op", Buckets: 2},
		"no name":     {Leases: leases, Namespace: "s", Buckets: 2, Identity: "a:1"},
		"short lease": {Leases: leases, Namespace: "s", Name: "op", Buckets: 2, Identity: "a:1", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New() = nil error", name)
		}
	}
}

func TestBucketsOfACrashedProcessAreTakenOver(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	crashed(t, leases)
	a := join(t, leases, "a:1")
	select {
	case <-a.TakenOver():
	case <-time.After(20 * time.Second):
		t.Fatal("a did not take over the crashed process's buckets")
	}
	eventually(t, "a holds every key", func() bool { return count(holders(t, a), "a:1") == len(keys) }, a)
}

// crashed makes every bucket's Lease, and a member Lease, held by a process
// that serves, and then crashes: renewed a moment ago, and never again.
func crashed(t *testing.T, leases coordinationv1client.LeasesGetter) {
	t.Helper()
	_, err := leases.Leases("system").Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "op.member.dead", Namespace: "system", Labels: map[string]string{LabelKey: "op"},
			Annotations: map[string]string{ActiveAnnotation: time.Now().UTC().Format(time.RFC3339Nano)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead:1"), LeaseDurationSeconds: ptr.To[int32](2),
			RenewTime: ptr.To(metav1.NowMicro())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range buckets {
		_, err := leases.Leases("system").Create(context.Background(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("op.bucket.%02d-of-%02d", i, buckets), Namespace: "system",
				Labels: map[string]string{LabelKey: "op"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead:1"), LeaseDurationSeconds: ptr.To[int32](2),
				RenewTime: ptr.To(metav1.NowMicro())},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// idleMember starts a member that has been idle for a LeaseDuration (2 s
// here): no reconcile begun, nor a start, since, as its member Lease says.
func idleMember(t *testing.T) (coordinationv1client.LeasesGetter, *member, context.Context) {
	t.Helper()
	leases := fake.NewClientset().CoordinationV1()
	a := join(t, leases, "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	a.Settle(ctx)
	resynced(t, leases, a) // its cold start
	leaseSaysActive(t, leases, a, false)
	return leases, a, ctx
}

// resynced tells m's Set that the resync it owes is done, and waits until
// its member Lease says so.
func resynced(t *testing.T, leases coordinationv1client.LeasesGetter, m *member) {
	t.Helper()
	m.Resynced()
	eventually(t, m.Identity()+"'s member Lease no longer says resyncing", func() bool {
		l, err := leases.Leases("system").Get(context.Background(), m.member, metav1.GetOptions{})
		return err == nil && l.Annotations[ResyncingAnnotation] == ""
	})
}

// leaseSaysActive waits until m's member Lease says whether its process
// was active within the last LeaseDuration.
func leaseSaysActive(t *testing.T, leases coordinationv1client.LeasesGetter, m *member, active bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s's member Lease says active: %v", m.Identity(), active), func() bool {
		l, err := leases.Leases("system").Get(context.Background(), m.member, metav1.GetOptions{})
		return err == nil && activeSince(l, time.Now().Add(-2*time.Second)) == active
	})
}

// A process that starts while the only other member has been idle for a
// LeaseDuration, as a pod that Knative drains after a scale to zero, is the
// first to serve: alone. Once that member has left, leading the buckets it
// held signals TakenOver, so that their keys get the resync too.
func TestAMemberIdleForALeaseLeavesTheNextAlone(t *testing.T) {
	leases, a, ctx := idleMember(t)
	b := join(t, leases, "b:1")
	if alone := b.Settle(ctx); !alone {
		t.Error("Settle() beside an idle member = not alone, want alone")
	}
	select {
	case <-b.TakenOver():
		t.Fatal("TakenOver signalled while the idle member still holds its buckets")
	default:
	}
	a.stop()
	select {
	case <-b.TakenOver():
	case <-ctx.Done():
		t.Fatal("no TakenOver once the idle member left and its buckets were taken")
	}
	eventually(t, "b holds every key", func() bool { return count(holders(t, b), "b:1") == len(keys) }, b)
}

// A member that began a reconcile within a LeaseDuration serves: the next
// process to start joins it.
func TestAMemberThatReconciledKeepsTheNextFromBeingAlone(t *testing.T) {
	leases, a, ctx := idleMember(t)
	holders(t, a) // a reconcile of every key
	leaseSaysActive(t, leases, a, true)
	b := join(t, leases, "b:1")
	if alone := b.Settle(ctx); alone {
		t.Error("Settle() beside a member that reconciled = alone, want not alone")
	}
}

// A member that has not reconciled the keys of the resync it owes does not
// serve for the next process to start: the keys it hands that one would be
// resynced by nobody. As when Knative starts several pods at once after a
// scale to zero, each starts alone, and owes the resync of its share.
func TestAMemberStillResyncingLeavesTheNextAlone(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	a := join(t, leases, "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if alone := a.Settle(ctx); !alone {
		t.Fatal("the first member's Settle() = not alone, want alone")
	}
	holders(t, a) // a reconcile of every key
	leaseSaysActive(t, leases, a, true)
	b := join(t, leases, "b:1")
	if alone := b.Settle(ctx); !alone {
		t.Error("Settle() beside a member still resyncing = not alone, want alone")
	}
	resynced(t, leases, a)
	c := join(t, leases, "c:1")
	if alone := c.Settle(ctx); alone {
		t.Error("Settle() beside a member that resynced = alone, want not alone")
	}
}

// Taking buckets over from a crashed process is a resync owed too: until
// it is done, a process that starts resyncs its share itself.
func TestAMemberThatTookOverServesOnceResynced(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	crashed(t, leases)
	a := join(t, leases, "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if a.Settle(ctx) {
		t.Fatal("Settle() beside a member that serves = alone")
	}
	select {
	case <-a.TakenOver():
	case <-ctx.Done():
		t.Fatal("a did not take over the crashed process's buckets")
	}
	holders(t, a) // a reconcile of every key
	leaseSaysActive(t, leases, a, true)
	if b := join(t, leases, "b:1"); !b.Settle(ctx) {
		t.Error("Settle() beside a member whose takeover is not resynced = not alone, want alone")
	}
}

// A member that leaves before its resync is done hands its buckets on owed:
// the one that takes them resyncs them.
func TestBucketsLeftBeforeTheirResyncAreTakenOverOwed(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1()
	a := join(t, leases, "a:1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a.Settle(ctx)
	resynced(t, leases, a)
	holders(t, a) // a reconcile of every key
	leaseSaysActive(t, leases, a, true)
	b := join(t, leases, "b:1")
	eventually(t, "the keys are shared", func() bool {
		h := holders(t, a, b)
		return len(h) == len(keys) && count(h, "a:1") > 0 && count(h, "b:1") > 0
	}, a, b)
	resynced(t, leases, b) // b owes none: its Lease says so
	b.mu.Lock()
	b.owing++ // as if a TakenOver signal's resync were pending
	b.mu.Unlock()
	eventually(t, "a has read that b holds buckets and resyncs", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.resyncingMember["b:1"] && slices.Contains(slices.Collect(maps.Values(a.lastHolder)), "b:1")
	}, a, b)
	b.stop()
	select {
	case <-a.TakenOver():
	case <-ctx.Done():
		t.Fatal("no TakenOver once b, still resyncing, left and a took its buckets")
	}
}

// refuseCreates makes cs refuse the creates of the Leases that match, until
// the returned flag is cleared.
func refuseCreates(cs *fake.Clientset, match func(*coordinationv1.Lease) bool) *atomic.Bool {
	refusing := new(atomic.Bool)
	refusing.Store(true)
	cs.PrependReactor("create", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if refusing.Load() && match(action.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)) {
			return true, nil, errors.New("refused by the test")
		}
		return false, nil, nil
	})
	return refusing
}

// A process alone at first owes a resync of its own share: the buckets it
// leads before Settle returns are its cold start's to list; until it leads
// the rest it says resyncing, and one it leads only after Settle gave up
// waiting signals TakenOver.
func TestABucketLedAfterSettleGaveUpIsOwed(t *testing.T) {
	cs := fake.NewClientset()
	late := fmt.Sprintf("op.bucket.03-of-%02d", buckets)
	refusing := refuseCreates(cs, func(l *coordinationv1.Lease) bool { return l.Name == late })
	a := join(t, cs.CoordinationV1(), "a:1")
	settleCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if !a.Settle(settleCtx) {
		t.Fatal("the first member's Settle() = not alone, want alone")
	}
	select {
	case <-a.TakenOver():
		t.Fatal("TakenOver signalled for buckets led before Settle returned")
	default:
	}
	// Its cold start's keys are reconciled, the late bucket's still owed.
	a.Resynced()
	after := time.Now()
	eventually(t, "a's member Lease is renewed after Resynced", func() bool {
		l, err := cs.CoordinationV1().Leases("system").Get(context.Background(), a.member, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(after)
	}, a)
	if l, err := cs.CoordinationV1().Leases("system").Get(context.Background(), a.member, metav1.GetOptions{}); err != nil || l.Annotations[ResyncingAnnotation] != "true" {
		t.Errorf("a's member Lease while a bucket it owes is not led: %v, %v; want %s", l.Annotations, err, ResyncingAnnotation)
	}
	refusing.Store(false)
	select {
	case <-a.TakenOver():
	case <-time.After(20 * time.Second):
		t.Fatal("no TakenOver once the bucket Settle gave up on was led")
	}
	eventually(t, "a holds every key", func() bool { return count(holders(t, a), "a:1") == len(keys) }, a)
}

// Processes that start together, each alone, each resync their own share.
// The buckets of another's share, unheld at a first read, are that one's to
// resync; so is one the first had not led yet when it went to the second.
// When either leaves, the other takes its buckets with no other resync.
func TestProcessesStartedTogetherOweNoResyncOfEachOthersShare(t *testing.T) {
	for _, leaving := range []string{"a:1", "b:1"} {
		t.Run(leaving+" leaves", func(t *testing.T) {
			cs := fake.NewClientset()
			// a's bucket Leases, until b has read them unheld
			refusing := refuseCreates(cs, func(l *coordinationv1.Lease) bool {
				return strings.Contains(l.Name, ".bucket.") && ptr.Deref(l.Spec.HolderIdentity, "") == "a:1"
			})
			leases := cs.CoordinationV1()
			a := join(t, leases, "a:1")
			eventually(t, "a's member Lease is written", func() bool {
				_, err := leases.Leases("system").Get(context.Background(), a.member, metav1.GetOptions{})
				return err == nil
			}, a)
			b := join(t, leases, "b:1")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if !b.Settle(ctx) {
				t.Fatal("b's Settle() beside a member still resyncing = not alone, want alone")
			}
			refusing.Store(false)
			eventually(t, "the keys are shared", func() bool {
				h := holders(t, a, b)
				return len(h) == len(keys) && count(h, "a:1") > 0 && count(h, "b:1") > 0
			}, a, b)
			a.Settle(ctx)
			resynced(t, leases, a)
			resynced(t, leases, b)
			stays, goes := a, b
			if leaving == "a:1" {
				stays, goes = b, a
			}
			eventually(t, stays.Identity()+" has read that "+goes.Identity()+" resynced", func() bool {
				stays.mu.Lock()
				defer stays.mu.Unlock()
				st, ok := stays.resyncingMember[goes.Identity()]
				return ok && !st
			}, a, b)
			select {
			case <-stays.TakenOver():
				t.Fatal("TakenOver signalled before " + goes.Identity() + " left")
			default:
			}
			goes.stop()
			eventually(t, stays.Identity()+" holds every key", func() bool {
				return count(holders(t, stays), stays.Identity()) == len(keys)
			}, stays)
			select {
			case <-stays.TakenOver():
				t.Error("TakenOver signalled for the buckets of a process that resynced them")
			default:
			}
		})
	}
}
