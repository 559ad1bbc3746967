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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/completion"
)

// Spread shares the keys among the processes that serve the operator, so
// that each key is reconciled by one process at a time (package buckets).
type Spread interface {
	// Enter admits a reconcile of key while this process holds it, until
	// leave is called.
	Enter(key string) (leave func(), ok bool)
	// Route tells where key is reconciled now: here (local), at the
	// address of another process, or nowhere yet (neither).
	Route(key string) (addr string, local bool)
	// Settle waits until this process holds what is its own, and tells
	// whether no other served when it started: then it owes a resync of
	// the keys it holds.
	Settle(ctx context.Context) (alone bool)
	// TakenOver is signalled when this process has taken keys over from
	// one that crashed: a resync restores what that one lost.
	TakenOver() <-chan struct{}
	// Resynced tells the others that a resync this process owed (its cold
	// start's when Settle said alone, or one TakenOver signalled) has
	// reconciled its keys: until then, the keys it hands on to a process
	// that starts are that one's to resync.
	Resynced()
}

// KeysPath is where a process takes the keys that another one sends on,
// because this one holds them.
const KeysPath = "/keys"

// rerouteEvery is how often keys that no process holds, or that moved, are
// routed again while their event waits.
const rerouteEvery = 100 * time.Millisecond

// drainingMsg answers what arrives while the process drains.
const drainingMsg = "shutting down"

// forwarded is the body of a request to KeysPath, and of its answer (the
// keys the receiving process did not hold).
type forwarded struct {
	Keys []string `json:"keys"`
	// Slow puts the keys in the slow lane, as a resync does.
	Slow bool `json:"slow,omitempty"`
	// Burst, if set, is a burst that the sender counted and the receiver
	// resyncs, as the holder of its key (burstResyncKey).
	Burst *handedBurst `json:"burst,omitempty"`
	// Written, if set, is what the event of the keys reports (its
	// Target.Written): if the receiver wrote it, there is nothing to
	// reconcile, as the sender would have found had it written it.
	Written *Written `json:"written,omitempty"`
}

// handedBurst is a burst one process hands to another.
type handedBurst struct {
	// Namespaces to list; none: every namespace.
	Namespaces []string `json:"namespaces,omitempty"`
}

// notReconciled says how many keys an event's deadline left unreconciled.
type notReconciled struct{ pending, of int }

func (e *notReconciled) Error() string {
	return fmt.Sprintf("%d of %d keys not reconciled", e.pending, e.of)
}

// settle reconciles keys, here or, with a Spread, wherever each is held
// (sent on with the Authorization auth and the Target.Written w of an
// event, if any: its holder may find it its own write), and returns once each
// has been reconciled by a reconcile that began after the call (nil), one
// failed, or ctx is done (a *notReconciled).
func (s *Server) settle(ctx context.Context, auth string, w *Written, keys []types.NamespacedName, slow bool) error {
	if s.opts.Spread == nil {
		return s.settleHere(ctx, keys, slow)
	}
	pending := keys
	ticker := time.NewTicker(rerouteEvery)
	defer ticker.Stop()
	for {
		var local []types.NamespacedName
		remote := map[string][]types.NamespacedName{}
		var unheld []types.NamespacedName
		for _, k := range pending {
			switch addr, here := s.opts.Spread.Route(k.String()); {
			case here:
				local = append(local, k)
			case addr != "":
				// Reconciled there: what an event handed off here
				// would be stale by the time this process holds k.
				s.decoder.Handoff.Forget(k)
				remote[addr] = append(remote[addr], k)
			default:
				unheld = append(unheld, k)
			}
		}
		type result struct {
			again []types.NamespacedName
			err   error
		}
		results := make(chan result, len(remote)+1)
		for addr, ks := range remote {
			go func() {
				again, err := s.forward(ctx, auth, w, addr, ks, slow)
				results <- result{again, err}
			}()
		}
		go func() {
			err := s.settleHere(ctx, local, slow)
			if completion.IsSkipped(err) { // moved since it was routed
				results <- result{local, nil}
				return
			}
			results <- result{nil, err}
		}()
		pending = unheld
		var failed error
		for range len(remote) + 1 {
			res := <-results
			pending = append(pending, res.again...)
			failed = worse(failed, res.err)
		}
		if failed != nil {
			return failed
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return &notReconciled{pending: len(pending), of: len(keys)}
		case <-ticker.C:
		}
	}
}

// worse keeps the first failure; a deadline counts less than a failed reconcile.
func worse(first, err error) error {
	var nr *notReconciled
	if first == nil || errors.As(first, &nr) && err != nil && !errors.As(err, &nr) {
		return err
	}
	return first
}

// settleHere enqueues keys in this process and waits for their reconciles.
func (s *Server) settleHere(ctx context.Context, keys []types.NamespacedName, slow bool) error {
	if len(keys) == 0 {
		return nil
	}
	awaited := s.completion.Await(keys)
	defer awaited.Stop()
	for _, k := range keys {
		if slow {
			s.impl.EnqueueSlowKey(k)
		} else {
			s.impl.EnqueueKey(k)
		}
	}
	if s.enqueued != nil {
		s.enqueued()
	}
	if err := awaited.Wait(ctx); err != nil {
		if completion.IsFailure(err) {
			return err
		}
		return &notReconciled{pending: awaited.Pending(), of: len(keys)}
	}
	return nil
}

// forward sends keys on to the process at addr, which holds them, with the
// Authorization auth and what their event reports written (w, if any), and
// waits for its answer: the keys it no longer held, to route again, or a
// failure.
func (s *Server) forward(ctx context.Context, auth string, w *Written, addr string, keys []types.NamespacedName, slow bool) ([]types.NamespacedName, error) {
	body := forwarded{Slow: slow, Written: w}
	for _, k := range keys {
		body.Keys = append(body.Keys, k.String())
	}
	again, err := s.post(ctx, auth, addr, body)
	var answered *answeredBadly
	switch {
	case err == nil:
		return parseKeys(again.Keys)
	case ctx.Err() != nil && (errors.Is(err, errGone) || errors.As(err, &answered) && answered.code == http.StatusServiceUnavailable):
		return nil, &notReconciled{pending: len(keys), of: len(keys)}
	case errors.Is(err, errGone):
		return keys, nil // route them again
	}
	return nil, err
}

// handBurst hands the resync of a burst in namespaces (every namespace if
// none) to the process at addr, which holds its key (burstResyncKey), with
// the Authorization auth of the event that made it a burst.
func (s *Server) handBurst(ctx context.Context, auth, addr string, namespaces []string) error {
	_, err := s.post(ctx, auth, addr, forwarded{Burst: &handedBurst{Namespaces: namespaces}})
	return err
}

// errGone is the failure of a process that was gone or going: it did
// nothing of what it was sent.
var errGone = errors.New("gone")

// answeredBadly is an answer other than 200 from another process.
type answeredBadly struct {
	addr string
	code int
	msg  string
}

func (a *answeredBadly) Error() string {
	return fmt.Sprintf("%s answered %d: %s", a.addr, a.code, oneLine(a.msg))
}

// post sends body to KeysPath of the process at addr, with the
// Authorization auth, and returns its answer.
func (s *Server) post(ctx context.Context, auth, addr string, body forwarded) (forwarded, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return forwarded{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+KeysPath, bytes.NewReader(b))
	if err != nil {
		return forwarded{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.forwarder.Do(req)
	if err != nil {
		return forwarded{}, fmt.Errorf("%w: %v", errGone, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusOK:
		var again forwarded
		if err := json.Unmarshal(msg, &again); err != nil {
			return forwarded{}, fmt.Errorf("bad answer from %s: %w", addr, err)
		}
		return again, nil
	case resp.StatusCode == http.StatusServiceUnavailable && bytes.HasPrefix(msg, []byte(drainingMsg)):
		return forwarded{}, fmt.Errorf("%w: %s is %s", errGone, addr, drainingMsg)
	}
	return forwarded{}, &answeredBadly{addr: addr, code: resp.StatusCode, msg: string(msg)}
}

func parseKeys(keys []string) ([]types.NamespacedName, error) {
	out := make([]types.NamespacedName, 0, len(keys))
	for _, k := range keys {
		ns, name, err := splitKey(k)
		if err != nil {
			return nil, err
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: name})
	}
	return out, nil
}

// splitKey splits what types.NamespacedName.String returns.
func splitKey(key string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("bad key %q: want namespace/name", key)
	}
	return ns, name, nil
}

// serveKeys reconciles the keys another process sent on: those this process
// holds, answering the others back to be routed again.
func (s *Server) serveKeys(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "keys are POSTed")
		return
	}
	if s.draining.Load() {
		reply(w, http.StatusServiceUnavailable, drainingMsg)
		return
	}
	if s.opts.Spread == nil {
		reply(w, http.StatusNotFound, "this process does not share its keys")
		return
	}
	done, ok := s.intake.admit(w)
	if !ok {
		return
	}
	defer done()
	if s.opts.Verifier != nil {
		if _, ok := s.opts.Verifier.Verify(w, r); !ok {
			return
		}
	}
	var body forwarded
	if err := json.NewDecoder(io.LimitReader(r.Body, s.opts.MaxBodyBytes)).Decode(&body); err != nil {
		reply(w, http.StatusBadRequest, "bad keys: "+err.Error())
		return
	}
	keys, err := parseKeys(body.Keys)
	if err != nil {
		reply(w, http.StatusBadRequest, err.Error())
		return
	}
	if body.Burst != nil {
		s.resyncs.handed(body.Burst.Namespaces, r.Header.Get("Authorization"))
	}
	var here []types.NamespacedName
	again := forwarded{Keys: []string{}}
	// The event reports this process's own write: nothing to reconcile.
	own := body.Written != nil && s.decoder.IsOwnWrite(body.Written)
	for _, k := range keys {
		// Another process was sent an event about k: what one handed
		// off here may no longer be k's object.
		s.decoder.Handoff.Forget(k)
		_, local := s.opts.Spread.Route(k.String())
		if local && own {
			continue
		}
		if local {
			here = append(here, k)
		} else {
			again.Keys = append(again.Keys, k.String())
		}
	}
	ctx, cancel := context.WithDeadline(r.Context(), arrived.Add(s.opts.AckDeadline))
	defer cancel()
	switch err := s.settleHere(ctx, here, body.Slow); {
	case completion.IsSkipped(err):
		again.Keys = body.Keys
	case err != nil:
		reply(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(again)
}
