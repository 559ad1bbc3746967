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

package streamkeeper

import (
	"context"
	"net/http"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Receiver keeps the source for the CloudEvents it receives, one keep at a
// time (each reads what the last wrote); what an event says is not read,
// only that something changed. An event is answered by the first keep that
// begins after it arrived, which every event arrived meanwhile shares: a
// burst of changes (CRDs installed at once) costs two keeps, not one each.
type Receiver struct {
	Keeper   *Keeper
	Logger   *zap.Logger
	Recorder record.EventRecorder // a Warning Event on each member left out

	mu      sync.Mutex
	running bool  // a keep runs
	next    *keep // the keep that begins once the running one ends, if any waits for it
}

// keep is one keep of the source, shared by the events that wait for it.
type keep struct {
	waiters int // the calls of Keep that wait for it
	done    chan struct{}
	err     error
}

// Keep keeps the source, in a keep that begins after Keep is called, and
// reports what it did. It returns the keep's error, or ctx's if ctx ends
// first (the keep goes on, for the others that wait for it).
func (r *Receiver) Keep(ctx context.Context) error {
	r.mu.Lock()
	k := r.next
	if k == nil {
		k = &keep{done: make(chan struct{})}
		r.next = k
	}
	k.waiters++
	if !r.running {
		r.running = true
		go r.run(context.WithoutCancel(ctx))
	}
	r.mu.Unlock()
	select {
	case <-k.done:
		return k.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run runs the keeps waited for, one after another, until none waits.
func (r *Receiver) run(ctx context.Context) {
	for {
		r.mu.Lock()
		k := r.next
		if k == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.next = nil
		waiters := k.waiters
		r.mu.Unlock()
		k.err = r.keep(ctx, waiters)
		close(k.done)
	}
}

// keep keeps the source once, for waiters calls of Keep, and reports what
// it did.
func (r *Receiver) keep(ctx context.Context, waiters int) error {
	ctx, cancel := context.WithTimeout(ctx, keepTimeout)
	defer cancel()
	kept, err := r.Keeper.Keep(ctx)
	if err != nil {
		r.Logger.Error("Failed to keep the stream's source", zap.Error(err))
		return err
	}
	for _, l := range kept.Left {
		r.Logger.Warn("A member is left out of the stream", zap.String("trigger", l.Trigger.Name), zap.Error(l.Reason))
		r.Recorder.Event(l.Trigger, corev1.EventTypeWarning, "LeftOutOfTheStream", l.Reason.Error())
	}
	r.Logger.Info("Kept the stream's source", zap.Strings("members", kept.Members), zap.Int("left", len(kept.Left)), zap.Bool("changed", kept.Changed), zap.Int("waiters", waiters))
	return nil
}

// keepTimeout bounds one keep's requests: a keep outlives the event that
// began it, so none of its requests waits on that event's deadline.
const keepTimeout = 30 * time.Second

// Receive answers 200 once the source is kept, 500 if it could not be, so
// that the sender sends the event again.
func (r *Receiver) Receive(ctx context.Context, _ cloudevents.Event) protocol.Result {
	if err := r.Keep(ctx); err != nil {
		return cehttp.NewResult(http.StatusInternalServerError, "%s", err.Error())
	}
	return nil
}
