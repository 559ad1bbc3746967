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
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// post sends body to a Receiver's HTTP handler as the broker does, and
// returns the status.
func post(t *testing.T, r *Receiver, body string, headers map[string]string) int {
	t.Helper()
	p, err := cloudevents.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	h, err := cloudevents.NewHTTPReceiveHandler(context.Background(), p, r.Receive)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

var ceHeaders = map[string]string{
	"Ce-Specversion": "1.0", "Ce-Id": "1", "Ce-Source": "/apis/v1/namespaces/operator-stream/apiserversources/operators",
	"Ce-Type": "dev.knative.apiserver.resource.update", "Content-Type": "application/json",
}

func TestReceiverAnswersOnceKept(t *testing.T) {
	k, ev := keeper(t, nil, allRights, member("foo-reconciler", foos), member("bar-reconciler", bars))
	events := record.NewFakeRecorder(10)
	r := &Receiver{Keeper: k, Logger: zap.NewNop(), Recorder: events}
	if code := post(t, r, `{}`, ceHeaders); code != http.StatusOK {
		t.Fatalf("answered %d, want 200", code)
	}
	if _, err := ev.SourcesV1().ApiServerSources("operator-stream").Get(context.Background(), "operators", metav1.GetOptions{}); err != nil {
		t.Error("answered 200 before the source was made:", err)
	}
	select {
	case e := <-events.Events:
		if !strings.HasPrefix(e, "Warning LeftOutOfTheStream ") || !strings.Contains(e, "Bar is not served") {
			t.Errorf("Event %q, want a Warning LeftOutOfTheStream saying Bars are not served", e)
		}
	default:
		t.Error("no Event for the member left out")
	}

	if err := k.Roles.ClusterRoles().Delete(context.Background(), ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := post(t, r, `{}`, ceHeaders); code != http.StatusInternalServerError {
		t.Errorf("answered %d without the reader's ClusterRole, want 500 (sent again)", code)
	}
	// sdk-go's answer to what is no CloudEvent: not sent again.
	if code := post(t, r, `not an event`, map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
		t.Errorf("answered %d to a request that is no CloudEvent, want 415", code)
	}
}

// Events that arrive while a keep runs share the next keep: each is
// answered by a keep begun after it, and a burst of them costs two keeps.
func TestEventsArrivedDuringAKeepShareTheNext(t *testing.T) {
	k, ev := keeper(t, nil, allRights, member("foo-reconciler", foos))
	started, release := make(chan struct{}), make(chan struct{})
	var lists atomic.Int32
	ev.PrependReactor("list", "triggers", func(clienttesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 1 {
			close(started)
			<-release
		}
		return false, nil, nil
	})
	r := &Receiver{Keeper: k, Logger: zap.NewNop(), Recorder: record.NewFakeRecorder(100)}
	first := make(chan int)
	go func() { first <- post(t, r, `{}`, ceHeaders) }()
	<-started

	const burst = 20
	codes := make(chan int, burst)
	for range burst {
		go func() { codes <- post(t, r, `{}`, ceHeaders) }()
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.next != nil && r.next.waiters == burst, nil
	}); err != nil {
		t.Fatal("the events do not all wait for the next keep:", err)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first event answered %d, want 200", code)
	}
	for range burst {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("an event answered %d, want 200", code)
		}
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("%d keeps (lists of the Triggers) for %d events, the last %d arrived during the first keep: want 2", n, burst+1, burst)
	}
}
