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
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"k8s.io/client-go/rest"
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
	// DiscoveryBaseURL is the issuer's base URL, for an issuer other than
	// the API server (eventing's oidc-discovery-base-url); empty: the API
	// server of the rest.Config, read with its credentials.
	DiscoveryBaseURL string
}

// Verifier admits the requests that carry a valid token, for the audience,
// of an admitted subject.
type Verifier struct {
	verifier *oidc.IDTokenVerifier
	subjects map[string]bool
}

// New returns a Verifier. It reads the issuer's discovery now; a failure is
// an error, not a Verifier that refuses everything. The signing keys are
// read when a token first needs them, and again when a token is signed by a
// key not known yet.
func New(ctx context.Context, restConfig *rest.Config, cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, fmt.Errorf("no audience")
	}
	if len(cfg.Subjects) == 0 {
		return nil, fmt.Errorf("no subject is admitted")
	}
	base, client := cfg.DiscoveryBaseURL, http.DefaultClient
	if base == "" {
		var err error
		if client, err = rest.HTTPClientFor(restConfig); err != nil {
			return nil, err
		}
		base = restConfig.Host
	}
	base = strings.TrimSuffix(base, "/")
	// The keys are read later, with this context: it must outlive ctx.
	ctx = oidc.ClientContext(context.WithoutCancel(ctx), client)
	// In a cluster the issuer is named (https://kubernetes.default.svc...)
	// otherwise than the address the API server is reached at: the
	// discovery says which, and tokens must name that one.
	provider, err := discover(ctx, client, base)
	if err != nil {
		return nil, err
	}
	subjects := make(map[string]bool, len(cfg.Subjects))
	for _, s := range cfg.Subjects {
		subjects[s] = true
	}
	return &Verifier{verifier: provider.Verifier(&oidc.Config{ClientID: cfg.Audience}), subjects: subjects}, nil
}

// discover reads base's OIDC discovery, once, into a provider of the issuer
// it names.
func discover(ctx context.Context, client *http.Client, base string) (*oidc.Provider, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to read the OIDC discovery of %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to read the OIDC discovery of %s: %s", base, resp.Status)
	}
	var d struct {
		Issuer     string   `json:"issuer"`
		JWKSURI    string   `json:"jwks_uri"`
		Algorithms []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return nil, fmt.Errorf("bad OIDC discovery at %s: %w", base, err)
	}
	if d.Issuer == "" || d.JWKSURI == "" {
		return nil, fmt.Errorf("bad OIDC discovery at %s: no issuer or jwks_uri", base)
	}
	cfg := oidc.ProviderConfig{IssuerURL: d.Issuer, JWKSURL: d.JWKSURI, Algorithms: d.Algorithms}
	return cfg.NewProvider(ctx), nil
}

// Verify answers 401 a request without a valid token for the audience, and
// 403 one whose token's subject is not admitted, and tells whether the
// request may go on (ok), and whether its sender is an ApiServerSource's
// adapter (inOrder; see InOrder).
func (v *Verifier) Verify(w http.ResponseWriter, r *http.Request) (inOrder, ok bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, "no token: only the event sources may send events here", http.StatusUnauthorized)
		return false, false
	}
	id, err := v.verifier.Verify(r.Context(), token)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, oneLine(err.Error()), http.StatusUnauthorized)
		return false, false
	}
	if !v.subjects[id.Subject] {
		http.Error(w, fmt.Sprintf("subject %q may not send events here", id.Subject), http.StatusForbidden)
		return false, false
	}
	return InOrder(id.Subject), true
}

// apiServerSourceIdentity ends the name of an ApiServerSource's OIDC
// identity: eventing names it <name>-oidc-<group>-<kind>, keeping the suffix
// when it shortens a long name (auth.GetOIDCServiceAccountNameForResource).
const apiServerSourceIdentity = "-oidc-sources.knative.dev-apiserversource"

// InOrder tells whether subject is an ApiServerSource's OIDC identity. Only
// that source's adapter holds its tokens, and it sends each watched
// object's events in order, one at a time, as its watch saw them (its
// reflector's store sends them, synchronously); it replays nothing on a
// relist. Through a broker, which promises no order, the sender is a
// Trigger's identity instead.
func InOrder(subject string) bool {
	sa, ok := strings.CutPrefix(subject, "system:serviceaccount:")
	return ok && strings.HasSuffix(sa, apiServerSourceIdentity)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
