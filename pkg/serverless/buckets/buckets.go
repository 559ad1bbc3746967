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
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/hash"
	"knative.dev/pkg/logging"
)

// LabelKey labels every Lease of a Set with its Config.Name.
const LabelKey = "serverless.frugal-operator.dev/buckets"

// ActiveAnnotation, on a member Lease, is when that process last began a
// reconcile, or started if later (RFC 3339). A member active within the
// last LeaseDuration serves; one idle longer may be a pod that Knative
// drains after a scale to zero, which renews its Lease until it stops.
const ActiveAnnotation = "serverless.frugal-operator.dev/active"

// ResyncingAnnotation, on a member Lease, is "true" while that process owes
// a resync of keys it holds: from its start until its first read finds a
// member that serves, and while a resync it runs as the first to serve, or
// for buckets it took over, has keys not yet reconciled (Set.Resynced). Such
// a member does not serve for another that starts: the keys it hands on
// before they are reconciled, nobody else would resync.
const ResyncingAnnotation = "serverless.frugal-operator.dev/resyncing"

// Defaults of Config: those of knative.dev/pkg's leader election.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config configures a Set.
type Config struct {
	// Leases reads and writes the Leases, in Namespace.
	Leases    coordinationv1client.LeasesGetter
	Namespace string
	// Name is the operator's: it prefixes the Leases' names and labels them.
	Name string
	// Buckets is how many buckets the keys are hashed into: at most that
	// many processes share the work.
	Buckets int
	// Identity is where this process takes the keys the others send on
	// (host:port), unique among the members.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are those of client-go's
	// leader election; zero values take the defaults above.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Set holds this process's buckets and knows who holds the others.
type Set struct {
	cfg    Config
	hashed *hash.BucketSet
	names  []string // the buckets' Lease names, sorted
	member string   // this process's member Lease

	mu   sync.Mutex
	idle *sync.Cond // signalled when a bucket's reconciles end
	own  map[string]*bucket
	// holders maps each bucket to its live holder, as last read.
	holders map[string]string
	// active is when this process last entered a reconcile, or started.
	active time.Time
	// aloneAtFirst says whether the first read saw no other member
	// serve: active, and not resyncing.
	aloneAtFirst bool
	// owing counts the resyncs this process owes (ResyncingAnnotation, which
	// an owed bucket of its own not led yet sets too): one from its start
	// until the first read finds a member that serves, or until Resynced;
	// one more per TakenOver signal sent.
	owing int
	// owed are, for a process alone at its first read, its own buckets then
	// and those that idle members held: what happened to their keys while
	// none served. Leading one after Settle has returned calls for a resync
	// (the cold start's covers those led before): one Settle gave up
	// waiting for, or one whose idle holder left later. Another member's
	// share is that member's to resync: it starts alone too, or serves.
	owed map[string]bool
	// lastHolder is each bucket's last live holder other than this process;
	// resyncingMember says whether a member's Lease said resyncing when
	// last read (members gone are kept while they are a last holder).
	lastHolder      map[string]string
	resyncingMember map[string]bool
	// settled is set once Settle has returned.
	settled bool
	// listed is closed once the Leases have been read.
	listed     chan struct{}
	listedOnce sync.Once
	lease      *coordinationv1.Lease // the member Lease as last written
	// takenOver is signalled when this process leads a bucket whose last
	// holder ended without releasing it, or an owed one.
	takenOver chan struct{}
}

// bucket is a bucket this process runs an elector for. Guarded by Set.mu.
type bucket struct {
	// orphan: its last holder is gone without releasing it.
	orphan    bool
	leading   bool
	releasing bool
	inflight  int
	cancel    context.CancelFunc
	done      chan struct{} // closed once the elector has stopped and released
}

// New returns a Set; Run makes it take part.
func New(cfg Config) (*Set, error) {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	switch {
	case cfg.Leases == nil || cfg.Namespace == "" || cfg.Name == "":
		return nil, errors.New("buckets: Leases, Namespace and Name are required")
	case cfg.Buckets < 1:
		return nil, fmt.Errorf("buckets: %d buckets, want at least 1", cfg.Buckets)
	case cfg.Identity == "":
		return nil, errors.New("buckets: no Identity (the address where this process takes keys)")
	case cfg.LeaseDuration <= cfg.RenewDeadline || float64(cfg.RenewDeadline) <= leaderelection.JitterFactor*float64(cfg.RetryPeriod):
		return nil, fmt.Errorf("buckets: want LeaseDuration (%v) > RenewDeadline (%v) > %v × RetryPeriod (%v)",
			cfg.LeaseDuration, cfg.RenewDeadline, leaderelection.JitterFactor, cfg.RetryPeriod)
	}
	names := make([]string, cfg.Buckets)
	for i := range names {
		names[i] = fmt.Sprintf("%s.bucket.%02d-of-%02d", cfg.Name, i, cfg.Buckets)
	}
	id := fnv.New64a()
	id.Write([]byte(cfg.Identity))
	s := &Set{cfg: cfg, hashed: hash.NewBucketSet(sets.New(names...)), names: names,
		member: fmt.Sprintf("%s.member.%016x", cfg.Name, id.Sum64()),
		own:    make(map[string]*bucket), listed: make(chan struct{}), takenOver: make(chan struct{}, 1),
		active: time.Now(), owing: 1, owed: make(map[string]bool),
		lastHolder: make(map[string]string), resyncingMember: make(map[string]bool)}
	s.idle = sync.NewCond(&s.mu)
	return s, nil
}

// Identity returns this process's identity.
func (s *Set) Identity() string { return s.cfg.Identity }

// Run takes part until ctx is done, reading the Leases and renewing this
// process's own every RetryPeriod; then it releases every bucket, once the
// reconciles inside Enter have ended, and leaves.
func (s *Set) Run(ctx context.Context) {
	ticker := time.NewTicker(s.cfg.RetryPeriod)
	defer ticker.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			s.leave(context.WithoutCancel(ctx))
			return
		case <-ticker.C:
		}
	}
}

// round renews the member Lease, reads every Lease of the Set, and starts
// or releases buckets as the live members share them.
func (s *Set) round(ctx context.Context) {
	logger := logging.FromContext(ctx)
	if err := s.renewMember(ctx); err != nil {
		logger.Warnw("Failed to renew the member Lease", zap.Error(err))
	}
	list, err := s.cfg.Leases.Leases(s.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelKey + "=" + s.cfg.Name})
	if err != nil {
		logger.Warnw("Failed to read the Leases", zap.Error(err))
		return
	}
	now := time.Now()
	members, holders := []string{s.cfg.Identity}, make(map[string]string, len(s.names))
	others := map[string]memberState{}
	othersServe := false
	last := map[string]string{} // each bucket's holder, live or not
	for i := range list.Items {
		l := &list.Items[i]
		holder, ok := liveHolder(l, now)
		switch {
		case slices.Contains(s.names, l.Name):
			last[l.Name] = holder
			if ok {
				holders[l.Name] = holder
			}
		case ok && holder != s.cfg.Identity:
			members = append(members, holder)
			st := memberState{active: activeSince(l, now.Add(-s.cfg.LeaseDuration)), resyncing: l.Annotations[ResyncingAnnotation] == "true"}
			others[holder] = st
			othersServe = othersServe || st.active && !st.resyncing
		}
	}
	slices.Sort(members)
	members = slices.Compact(members)
	mine := assigned(s.names, members, s.cfg.Identity)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders = holders
	s.remember(holders, others)
	for _, name := range mine {
		if s.own[name] == nil {
			// A member that leaves releases its buckets first: one held by
			// a process no longer a member was left by a crash.
			h := last[name]
			s.own[name] = s.elect(ctx, name, h != "" && h != s.cfg.Identity && !slices.Contains(members, h))
		}
	}
	for name, b := range s.own {
		if !b.releasing && !slices.Contains(mine, name) {
			b.releasing = true
			// Owed and never led: this process said resyncing meanwhile
			// (renewMember), so the member it goes to started alone and
			// resyncs it, or takes it owed from a member resyncing.
			delete(s.owed, name)
			go s.release(name, b)
		}
	}
	s.listedOnce.Do(func() {
		s.aloneAtFirst = !othersServe
		if !s.aloneAtFirst {
			s.owing-- // the others served while this process did not
		}
		if s.aloneAtFirst {
			for _, name := range s.names {
				h, held := holders[name]
				if slices.Contains(mine, name) || held && h != s.cfg.Identity && !others[h].active {
					s.owed[name] = true
				}
			}
		}
		close(s.listed)
	})
}

// memberState is what another member's Lease says of its process.
type memberState struct{ active, resyncing bool }

// remember keeps, from a read, each bucket's last live holder other than
// this process, and whether each member still owed a resync when last
// read: a bucket handed on by one that did is owed it here. Callers hold
// s.mu.
func (s *Set) remember(holders map[string]string, others map[string]memberState) {
	for name, h := range holders {
		if h == s.cfg.Identity {
			delete(s.lastHolder, name)
		} else {
			s.lastHolder[name] = h
		}
	}
	for id, st := range others {
		s.resyncingMember[id] = st.resyncing
	}
	kept := sets.New[string]()
	for _, h := range s.lastHolder {
		kept.Insert(h)
	}
	for id := range s.resyncingMember {
		if _, ok := others[id]; !ok && !kept.Has(id) {
			delete(s.resyncingMember, id)
		}
	}
}

// liveHolder returns a Lease's holder ("" if released), and whether its
// term has not ended by now (by this process's clock).
func liveHolder(l *coordinationv1.Lease, now time.Time) (string, bool) {
	sp := l.Spec
	if sp.HolderIdentity == nil || *sp.HolderIdentity == "" || sp.RenewTime == nil || sp.LeaseDurationSeconds == nil {
		return "", false
	}
	return *sp.HolderIdentity, now.Before(sp.RenewTime.Add(time.Duration(*sp.LeaseDurationSeconds) * time.Second))
}

// activeSince tells whether a member Lease says its process was active at
// or after since; one without ActiveAnnotation (a process of a version
// that does not write it) counts as active.
func activeSince(l *coordinationv1.Lease, since time.Time) bool {
	at, err := time.Parse(time.RFC3339Nano, l.Annotations[ActiveAnnotation])
	return err != nil || !at.Before(since)
}

// assigned returns the buckets that fall to me when the sorted buckets are
// dealt round the sorted members.
func assigned(buckets, members []string, me string) []string {
	i := slices.Index(members, me)
	var mine []string
	for j, b := range buckets {
		if j%len(members) == i {
			mine = append(mine, b)
		}
	}
	return mine
}

// elect starts an elector for the named bucket, an orphan if its last
// holder crashed. Callers hold s.mu.
func (s *Set) elect(ctx context.Context, name string, orphan bool) *bucket {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &bucket{orphan: orphan, cancel: cancel, done: make(chan struct{})}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.cfg.Namespace, Name: name},
		Client:     s.cfg.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.cfg.Identity},
		Labels:     map[string]string{LabelKey: s.cfg.Name},
	}
	config := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   s.cfg.LeaseDuration,
		RenewDeadline:   s.cfg.RenewDeadline,
		RetryPeriod:     s.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			// Run cancels leading's context before it calls
			// OnStoppedLeading: a start seen after the stop sets nothing.
			OnStartedLeading: func(leading context.Context) {
				s.mu.Lock()
				defer s.mu.Unlock()
				b.leading = leading.Err() == nil
				owed := b.orphan || s.owed[name] || s.resyncingMember[s.lastHolder[name]]
				if b.leading {
					b.orphan = false
					delete(s.owed, name)
				}
				// Until Settle has returned to a process alone at first, its
				// cold start's resync is still to list: it covers the bucket.
				if b.leading && owed && (!s.aloneAtFirst || s.settled) {
					select {
					case s.takenOver <- struct{}{}:
						s.owing++
					default: // one is pending: its resync covers this bucket too
					}
				}
			},
			OnStoppedLeading: func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				b.leading = false
			},
		},
	}
	go func() {
		defer close(b.done)
		// A term ends when a renewal fails: stand again while the bucket
		// is this process's.
		for ctx.Err() == nil {
			le, err := leaderelection.NewLeaderElector(config)
			if err != nil { // New checked the config
				logging.FromContext(ctx).Errorw("Failed to elect", zap.String("bucket", name), zap.Error(err))
				return
			}
			le.Run(ctx)
		}
	}()
	return b
}

// release lets go of a bucket once the reconciles inside Enter have ended.
func (s *Set) release(name string, b *bucket) {
	s.mu.Lock()
	for b.inflight > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	b.cancel()
	<-b.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own[name] == b {
		delete(s.own, name)
	}
}

// leave releases every bucket, then deletes the member Lease.
func (s *Set) leave(ctx context.Context) {
	s.mu.Lock()
	var wg sync.WaitGroup
	for name, b := range s.own {
		if !b.releasing {
			b.releasing = true
			wg.Go(func() { s.release(name, b) })
		} else {
			wg.Go(func() { <-b.done })
		}
	}
	s.mu.Unlock()
	wg.Wait()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RenewDeadline)
	defer cancel()
	err := s.cfg.Leases.Leases(s.cfg.Namespace).Delete(ctx, s.member, metav1.DeleteOptions{})
	if err != nil && !apierrs.IsNotFound(err) {
		logging.FromContext(ctx).Warnw("Failed to delete the member Lease", zap.Error(err))
	}
}

// owesUnled tells whether a bucket of this process's own is owed a resync
// and not led yet: the resync is still to come. Callers hold s.mu.
func (s *Set) owesUnled() bool {
	for name, b := range s.own {
		if s.owed[name] && !b.leading && !b.releasing {
			return true
		}
	}
	return false
}

// renewMember writes this process's member Lease, renewed now.
func (s *Set) renewMember(ctx context.Context) error {
	leases := s.cfg.Leases.Leases(s.cfg.Namespace)
	now := metav1.NowMicro()
	s.mu.Lock()
	annotations := map[string]string{ActiveAnnotation: s.active.UTC().Format(time.RFC3339Nano)}
	if s.owing > 0 || s.owesUnled() {
		annotations[ResyncingAnnotation] = "true"
	}
	s.mu.Unlock()
	annotate := func(l *coordinationv1.Lease) {
		delete(l.Annotations, ResyncingAnnotation)
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&l.ObjectMeta, k, v)
		}
	}
	if s.lease != nil {
		l := s.lease.DeepCopy()
		l.Spec.RenewTime = &now
		annotate(l)
		if u, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
			s.lease = u
			return nil
		}
	}
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(s.cfg.Identity),
		LeaseDurationSeconds: ptr.To(int32(s.cfg.LeaseDuration / time.Second)),
		RenewTime:            &now,
	}
	l, err := leases.Get(ctx, s.member, metav1.GetOptions{})
	switch {
	case apierrs.IsNotFound(err):
		l, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: s.member, Namespace: s.cfg.Namespace, Labels: map[string]string{LabelKey: s.cfg.Name},
				Annotations: annotations},
			Spec: spec,
		}, metav1.CreateOptions{})
	case err == nil:
		l = l.DeepCopy()
		l.Spec = spec
		annotate(l)
		l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		s.lease = nil
		return err
	}
	s.lease = l
	return nil
}

// Enter admits a reconcile of key while this process leads its bucket, and
// keeps the bucket until leave is called. It returns false if the key is
// not this process's now.
func (s *Set) Enter(key string) (leave func(), ok bool) {
	name := s.hashed.Owner(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.own[name]
	if b == nil || !b.leading || b.releasing {
		return nil, false
	}
	b.inflight++
	s.active = time.Now()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if b.inflight--; b.inflight == 0 {
			s.idle.Broadcast()
		}
	}, true
}

// Route tells where key is reconciled now: here (local), at the address of
// the member that holds its bucket, or nowhere yet (neither: wait for the
// next read).
func (s *Set) Route(key string) (addr string, local bool) {
	name := s.hashed.Owner(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.own[name]; b != nil && b.leading && !b.releasing {
		return "", true
	}
	if h := s.holders[name]; h != s.cfg.Identity {
		return h, false
	}
	return "", false
}

// TakenOver is signalled when this process has taken over a bucket from a
// process that crashed: what that one was doing when it did, no event may
// bring again (a sender gives up), so a resync should. It is signalled too
// when a process that started with no other member serving leads a bucket
// that another member held then: that member was on its way out, and its
// keys are still owed the resync that the first process after none runs.
// Call Resynced once the keys of the resync a signal asks for are reconciled.
func (s *Set) TakenOver() <-chan struct{} { return s.takenOver }

// Resynced tells the other members that a resync this process owed has
// reconciled its keys: the cold start's, when Settle said alone, or one
// signalled by TakenOver. Until then, another process that starts counts
// this one as not serving, and resyncs the keys it holds itself.
func (s *Set) Resynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owing > 0 {
		s.owing--
	}
}

// Settle waits until the Leases have been read and this process leads
// every bucket that is its own, or ctx is done. It returns whether the first
// read saw no other member serve: active (one that began a reconcile or
// started within LeaseDuration) and not resyncing (ResyncingAnnotation).
// Then this process is among the first to serve after a time when none did,
// as when Knative starts a pod while it still drains the last one of a
// scale to zero, or starts several at once, and it owes a resync of the
// keys it holds (Resynced says when it is done).
func (s *Set) Settle(ctx context.Context) (alone bool) {
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.settled = true
	}()
	select {
	case <-s.listed:
	case <-ctx.Done():
		return false
	}
	s.mu.Lock()
	alone = s.aloneAtFirst
	s.mu.Unlock()
	ticker := time.NewTicker(s.cfg.RetryPeriod / 10)
	defer ticker.Stop()
	for !s.leadsAllItsOwn() {
		select {
		case <-ctx.Done():
			return alone
		case <-ticker.C:
		}
	}
	return alone
}

func (s *Set) leadsAllItsOwn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.own {
		if !b.leading && !b.releasing {
			return false
		}
	}
	return len(s.own) > 0
}
