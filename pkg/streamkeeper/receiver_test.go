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
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
