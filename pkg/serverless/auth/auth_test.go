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
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	logtesting "knative.dev/pkg/logging/testing"
)

// issuer is an OIDC issuer as the API server is one: discovery and JWKS.
type issuer struct {
	*httptest.Server
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/openid/v1/jwks",
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "k1",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// token signs an RS256 JWT with key.
func token(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "k1"})
	c, _ := json.Marshal(claims)
	signed := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

func TestVerify(t *testing.T) {
	is := newIssuer(t)
	ctx := logtesting.TestContextWithLogger(t)
	const (
		aud     = "foo-reconciler"
		allowed = "system:serviceaccount:foo-operator:foos-oidc-sources.knative.dev-apiserversource"
		trigger = "system:serviceaccount:foo-operator:foo-reconciler-foos-oidc-eventing.knative.dev-trigger"
	)
	v, err := New(ctx, &rest.Config{}, Config{Audience: aud, Subjects: []string{allowed, trigger}, DiscoveryBaseURL: is.URL})
	if err != nil {
		t.Fatal("New() =", err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := time.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": is.URL, "sub": allowed, "aud": []string{aud}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		token   string
		want    int // 0: admitted
		inOrder bool
	}{
		{"valid: an ApiServerSource's adapter", token(t, is.key, claims(nil)), 0, true},
		{"valid: a Trigger (the broker)", token(t, is.key, claims(func(c map[string]any) { c["sub"] = trigger })), 0, false},
		{"none", "", http.StatusUnauthorized, false},
		{"not a JWT", "abc", http.StatusUnauthorized, false},
		{"expired", token(t, is.key, claims(func(c map[string]any) {
			c["iat"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		})), http.StatusUnauthorized, false},
		{"wrong audience", token(t, is.key, claims(func(c map[string]any) { c["aud"] = []string{"someone-else"} })), http.StatusUnauthorized, false},
		{"another issuer's key", token(t, other, claims(nil)), http.StatusUnauthorized, false},
		{"another issuer", token(t, is.key, claims(func(c map[string]any) { c["iss"] = "https://elsewhere" })), http.StatusUnauthorized, false},
		{"subject not admitted", token(t, is.key, claims(func(c map[string]any) {
			c["sub"] = "system:serviceaccount:default:curious"
		})), http.StatusForbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(context.Background())
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			inOrder, ok := v.Verify(w, r)
			switch {
			case tc.want == 0 && !ok:
				t.Errorf("refused (%d %s), want admitted", w.Code, w.Body)
			case tc.want == 0 && inOrder != tc.inOrder:
				t.Errorf("Verify() says in order: %v, want %v", inOrder, tc.inOrder)
			case tc.want != 0 && (ok || inOrder || w.Code != tc.want):
				t.Errorf("Verify() = %v, %v, %d; want refused with %d", inOrder, ok, w.Code, tc.want)
			}
		})
	}
}

// Without a discovery base URL, the issuer is the API server of the
// rest.Config, read with its client.
func TestIssuerIsTheAPIServer(t *testing.T) {
	is := newIssuer(t)
	ctx := logtesting.TestContextWithLogger(t)
	v, err := New(ctx, &rest.Config{Host: is.URL}, Config{Audience: "a", Subjects: []string{"s"}})
	if err != nil {
		t.Fatal("New() =", err)
	}
	now := time.Now()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token(t, is.key, map[string]any{"iss": is.URL, "sub": "s", "aud": "a", "exp": now.Add(time.Hour).Unix()}))
	if w := httptest.NewRecorder(); !admitted(v.Verify(w, r)) {
		t.Errorf("refused (%d %s), want admitted", w.Code, w.Body)
	}
}

func admitted(_, ok bool) bool { return ok }

func TestInOrder(t *testing.T) {
	for subject, want := range map[string]bool{
		"system:serviceaccount:foo-operator:foos-oidc-sources.knative.dev-apiserversource": true,
		// A long source name is shortened, its suffix kept (kmeta.ChildName).
		"system:serviceaccount:ns:a-very-long-source-name-that-was-hashed0123456789abcdef-oidc-sources.knative.dev-apiserversource": true,
		"system:serviceaccount:foo-operator:foo-resync-oidc-sources.knative.dev-pingsource":                                         false,
		"system:serviceaccount:foo-operator:foo-reconciler-foos-oidc-eventing.knative.dev-trigger":                                  false,
		"foos-oidc-sources.knative.dev-apiserversource":                                                                             false,
		"system:node:foos-oidc-sources.knative.dev-apiserversource":                                                                 false,
	} {
		if got := InOrder(subject); got != want {
			t.Errorf("InOrder(%q) = %v, want %v", subject, got, want)
		}
	}
}

func TestNewRefusesToGuess(t *testing.T) {
	ctx := logtesting.TestContextWithLogger(t)
	is := newIssuer(t)
	for name, cfg := range map[string]Config{
		"no audience":          {Subjects: []string{"s"}, DiscoveryBaseURL: is.URL},
		"no subject":           {Audience: "a", DiscoveryBaseURL: is.URL},
		"discovery unreadable": {Audience: "a", Subjects: []string{"s"}, DiscoveryBaseURL: "http://127.0.0.1:1"},
	} {
		if _, err := New(ctx, &rest.Config{}, cfg); err == nil {
			t.Errorf("%s: New() = nil error", name)
		}
	}
}
