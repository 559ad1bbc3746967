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

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Receiver keeps the source once for each CloudEvent it receives, one keep
// at a time (each reads what the last wrote); what an event says is not
// read, only that something changed.
type Receiver struct {
	Keeper   *Keeper
	Logger   *zap.Logger
	Recorder record.EventRecorder // a Warning Event on each member left out

	mu sync.Mutex
}

// Keep keeps the source and reports what it did.
func (r *Receiver) Keep(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept, err := r.Keeper.Keep(ctx)
	if err != nil {
		r.Logger.Error("Failed to keep the stream's source", zap.Error(err))
		return err
	}
	for _, l := range kept.Left {
		r.Logger.Warn("A member is left out of the stream", zap.String("trigger", l.Trigger.Name), zap.Error(l.Reason))
		r.Recorder.Event(l.Trigger, corev1.EventTypeWarning, "LeftOutOfTheStream", l.Reason.Error())
	}
	r.Logger.Info("Kept the stream's source", zap.Strings("members", kept.Members), zap.Int("left", len(kept.Left)), zap.Bool("changed", kept.Changed))
	return nil
}

// Receive answers 200 once the source is kept, 500 if it could not be, so
// that the sender sends the event again.
func (r *Receiver) Receive(ctx context.Context, _ cloudevents.Event) protocol.Result {
	if err := r.Keep(ctx); err != nil {
		return cehttp.NewResult(http.StatusInternalServerError, "%s", err.Error())
	}
	return nil
}
