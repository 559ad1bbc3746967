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

package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	eventingauth "knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/apis/feature"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/injection"
)

// Config says whom a Verifier admits.
type Config struct {
	// Audience is the audience the tokens must be for: the sink's
	// (spec.sink.audience of the sources, the Triggers' subscriber
	// audience).
	Audience string
	// Subjects are the identities admitted: the sources' and the broker's
	// OIDC service accounts ("system:serviceaccount:<ns>:<name>"). A token
	// of another subject is refused (403).
	Subjects []string
	// DiscoveryBaseURL is where the issuer's OIDC discovery is read:
	// eventing's oidc-discovery-base-url, https://kubernetes.default.svc
	// when empty (then through the API client's credentials).
	DiscoveryBaseURL string
}

// Verifier admits the requests that carry a valid token, for the audience,
// of an admitted subject.
type Verifier struct {
	v        *eventingauth.Verifier
	features feature.Flags
	audience string
	subjects map[string]bool
}

// New returns a Verifier. It reads the issuer's OIDC discovery now, through
// cfg for https://kubernetes.default.svc; a failure is an error, not a
// Verifier that refuses everything.
func New(ctx context.Context, restConfig *rest.Config, cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, fmt.Errorf("no audience")
	}
	if len(cfg.Subjects) == 0 {
		return nil, fmt.Errorf("no subject is admitted")
	}
	data := map[string]string{
		feature.OIDCAuthentication: string(feature.Enabled),
		// Authorization is the subjects' list, below: eventing's default
		// mode (allow-same-namespace) would refuse every token here, where
		// the verifier has no resource namespace.
		feature.AuthorizationDefaultMode: string(feature.AuthorizationAllowAll),
	}
	if cfg.DiscoveryBaseURL != "" {
		data[feature.OIDCDiscoveryBaseURL] = cfg.DiscoveryBaseURL
	}
	features, err := feature.NewFlagsConfigFromMap(data)
	if err != nil {
		return nil, err
	}
	// The flags never change: a static watcher, no informer.
	flags := configmap.NewStaticWatcher(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: feature.FlagsConfigName},
		Data:       data,
	})
	v := eventingauth.NewVerifier(injection.WithConfig(ctx, restConfig), nil, nil, flags)
	if !v.IsReady() {
		return nil, fmt.Errorf("failed to read the OIDC discovery of %s", features.OIDCDiscoveryBaseURL())
	}
	subjects := make(map[string]bool, len(cfg.Subjects))
	for _, s := range cfg.Subjects {
		subjects[s] = true
	}
	return &Verifier{v: v, features: features, audience: cfg.Audience, subjects: subjects}, nil
}

// Verify answers 401 a request without a valid token for the audience, and
// 403 one whose token's subject is not admitted, and tells whether the
// request may go on.
func (v *Verifier) Verify(w http.ResponseWriter, r *http.Request) bool {
	// Authentication only: with no EventPolicy and the allow-all mode, any
	// valid token for the audience passes.
	rec := &statusRecorder{ResponseWriter: w}
	if err := v.v.VerifyRequest(r.Context(), v.features, &v.audience, "", nil, r, rec); err != nil {
		if rec.code == 0 {
			rec.WriteHeader(http.StatusUnauthorized)
		}
		_, _ = fmt.Fprintln(rec, oneLine(err.Error()))
		return false
	}
	sub, err := subject(eventingauth.GetJWTFromHeader(r.Header))
	if err != nil || !v.subjects[sub] {
		http.Error(w, fmt.Sprintf("subject %q may not send events here", sub), http.StatusForbidden)
		return false
	}
	return true
}

// subject reads the sub claim of a JWT that was verified.
func subject(jwt string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	err = json.Unmarshal(payload, &claims)
	return claims.Sub, err
}

// statusRecorder remembers whether a status was written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
