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

package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// readyTimeout bounds the wait for each component to become ready, on top of
// any deadline of the context given to Start. A cold kube-apiserver on a
// loaded 2-core machine takes well under a minute.
const readyTimeout = 2 * time.Minute

// Options configure Start.
type Options struct {
	// Dir holds the control plane's data, certificates, kubeconfigs and the
	// logs of every process it starts. If empty, Start makes a temporary
	// directory, which Stop removes unless KeepDir is set. A Dir given here
	// is never removed.
	Dir string
	// KeepDir keeps the temporary directory made for an empty Dir, with its
	// logs, after Stop.
	KeepDir bool
	// Log, if set, receives every line the processes write, prefixed with
	// the process's name, in addition to the process's own log file in Dir.
	Log io.Writer
	// ControllerManager starts kube-controller-manager with only the garbage
	// collector and the namespace controller, so that owned objects are
	// deleted with their owner and deleted namespaces go away.
	ControllerManager bool
	// AuditServiceAccounts makes the API server write every request of a
	// ServiceAccount, at the Metadata level, as JSON lines to AuditLog: what
	// a least-privilege test reads.
	AuditServiceAccounts bool
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL, for
	// each process. Zero means DefaultStopTimeout.
	StopTimeout time.Duration
	// Profiling serves the API server's /debug/pprof (to the admin).
	Profiling bool
}

// ControlPlane is a running etcd, kube-apiserver and, optionally,
// kube-controller-manager, all on 127.0.0.1.
type ControlPlane struct {
	// Dir is the working directory; see Options.Dir.
	Dir string
	// URL is the API server's address, https://127.0.0.1:<port>.
	URL string
	// CAData is the PEM bundle that verifies the API server's serving
	// certificate.
	CAData []byte
	// AuditLog is the API server's audit log, if Options.AuditServiceAccounts.
	AuditLog string
	// AdminToken is a static bearer token of a user in group system:masters.
	AdminToken string
	// AdminKubeconfig is the path of a kubeconfig that uses AdminToken.
	AdminKubeconfig string
	// RESTConfig is the admin's client configuration. Copy it with
	// rest.CopyConfig before changing it.
	RESTConfig *rest.Config
	// EtcdURL is etcd's client address, http://127.0.0.1:<port>.
	EtcdURL string

	// Etcd, APIServer and ControllerManager are the processes Start
	// started; ControllerManager is nil unless Options.ControllerManager.
	Etcd, APIServer, ControllerManager *Process

	opts      Options
	removeDir bool
	sink      *lineSink

	mu    sync.Mutex
	extra []*Process
	// The API server's binary and flags, to restart it.
	apiServerBin  string
	apiServerArgs []string
	stopped       bool

	stopOnce sync.Once
	stopErr  error
}

// Start starts etcd and kube-apiserver, waits until the API server is ready
// and, if asked, starts kube-controller-manager and waits until its
// controllers run. ctx bounds only the start: the processes keep running
// until Stop. A Start that fails stops whatever it had started.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	c := &ControlPlane{opts: opts}
	if opts.Log != nil {
		c.sink = &lineSink{w: opts.Log}
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "foo-controlplane-")
		if err != nil {
			return nil, fmt.Errorf("failed to create a work directory: %w", err)
		}
		c.Dir, c.removeDir = dir, !opts.KeepDir
	} else {
		dir, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("failed to resolve work directory %q: %w", opts.Dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create work directory %q: %w", dir, err)
		}
		c.Dir = dir
	}
	if err := c.startAll(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *ControlPlane) startAll(ctx context.Context) error {
	// Resolve every binary before starting anything, so that a missing one
	// fails fast.
	names := []string{"etcd", "kube-apiserver"}
	if c.opts.ControllerManager {
		names = append(names, "kube-controller-manager")
	}
	bins := map[string]string{}
	for _, name := range names {
		bin, err := BinaryPath(name)
		if err != nil {
			return err
		}
		bins[name] = bin
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]

	if err := c.startEtcd(ctx, bins["etcd"], etcdPort, peerPort); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, bins["kube-apiserver"], apiPort); err != nil {
		return err
	}
	if c.opts.ControllerManager {
		return c.startControllerManager(ctx, bins["kube-controller-manager"], kcmPort)
	}
	return nil
}

// Stop stops the processes started with StartProcess (the last started
// first), then kube-controller-manager, kube-apiserver and etcd, in that
// order: an API server whose etcd is gone hangs in its shutdown. Each gets
// SIGTERM, then SIGKILL after the stop timeout. Stop removes Dir only if
// Start made it. Calling Stop again returns the first call's result.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped = true
		extra := c.extra
		own := []*Process{c.ControllerManager, c.APIServer, c.Etcd}
		c.mu.Unlock()

		var errs []error
		for i := len(extra) - 1; i >= 0; i-- {
			errs = append(errs, extra[i].Stop())
		}
		for _, p := range own {
			if p != nil {
				errs = append(errs, p.Stop())
			}
		}
		if c.removeDir {
			if err := os.RemoveAll(c.Dir); err != nil {
				errs = append(errs, fmt.Errorf("failed to remove work directory: %w", err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// StartProcess starts cmd and tracks it, so that Stop stops it, by its PID,
// before the control plane. Unless the command's Stdout or Stderr is set, its
// output goes to <name>.log in Dir (and to Options.Log). The command must not
// have been started; its Wait is called by the returned Process.
func (c *ControlPlane) StartProcess(name string, cmd *exec.Cmd) (*Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("failed to start %s: the control plane is stopped", name)
	}
	p, err := startProcess(name, cmd, c.Dir, c.sink, c.opts.StopTimeout)
	if err != nil {
		return nil, err
	}
	c.extra = append(c.extra, p)
	return p, nil
}

func (c *ControlPlane) startChild(name, bin string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = c.Dir
	return startProcess(name, cmd, c.Dir, c.sink, c.opts.StopTimeout)
}

func (c *ControlPlane) startEtcd(ctx context.Context, bin string, clientPort, peerPort int) error {
	c.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := c.startChild("etcd", bin,
		"--name=controlplane",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+c.EtcdURL,
		"--advertise-client-urls="+c.EtcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=controlplane="+peerURL,
		// Test data is disposable; fsync only slows every write down.
		"--unsafe-no-fsync",
	)
	if err != nil {
		return err
	}
	c.Etcd = p
	client := &http.Client{}
	return waitFor(ctx, p, func(ctx context.Context) error {
		body, err := get(ctx, client, c.EtcdURL+"/health", "")
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"health":"true"`) {
			return fmt.Errorf("etcd is not healthy: %s", body)
		}
		return nil
	})
}

func (c *ControlPlane) startAPIServer(ctx context.Context, bin string, port int) error {
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	certDir := filepath.Join(c.Dir, "apiserver-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", certDir, err)
	}
	pubKey, privKey, err := writeServiceAccountKeys(c.Dir)
	if err != nil {
		return err
	}
	if c.AdminToken, err = randomToken(); err != nil {
		return err
	}
	tokenFile := filepath.Join(c.Dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(c.AdminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", tokenFile, err)
	}

	var audit []string
	if c.opts.AuditServiceAccounts {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", policy, err)
		}
		c.AuditLog = filepath.Join(c.Dir, "audit.log")
		// Read by byte offset: a size past any run's, so it never rotates.
		audit = []string{"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLog,
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=10240"}
	}
	c.apiServerArgs = append([]string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// The API server makes its own self-signed serving certificate here.
		"--cert-dir=" + certDir,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=" + c.URL,
		"--service-account-key-file=" + pubKey,
		"--service-account-signing-key-file=" + privKey,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		// Nothing creates default ServiceAccounts (no token controller), and
		// nothing runs pods that would need their tokens mounted.
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=" + strconv.FormatBool(c.opts.Profiling),
	}, audit...)
	if err := c.runAPIServer(ctx, bin); err != nil {
		return err
	}

	c.RESTConfig = &rest.Config{
		Host:            c.URL,
		BearerToken:     c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
	}
	c.AdminKubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	return writeKubeconfig(c.AdminKubeconfig, c.URL, c.CAData, "admin", c.AdminToken, "default")
}

// runAPIServer starts kube-apiserver with c.apiServerArgs and waits until it
// is ready, reading the CA of the serving certificate it made (or kept).
func (c *ControlPlane) runAPIServer(ctx context.Context, bin string) error {
	p, err := c.startChild("kube-apiserver", bin, c.apiServerArgs...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.APIServer, c.apiServerBin = p, bin
	c.mu.Unlock()

	// The serving certificate, followed by the CA that signed it.
	certFile := filepath.Join(c.Dir, "apiserver-certs", "apiserver.crt")
	if err := waitFor(ctx, p, func(ctx context.Context) error {
		ca, err := os.ReadFile(certFile)
		if err != nil {
			return fmt.Errorf("no serving certificate yet: %w", err)
		}
		client, err := tlsClient(ca)
		if err != nil {
			return err
		}
		body, err := get(ctx, client, c.URL+"/readyz", c.AdminToken)
		if err != nil {
			return err
		}
		if body != "ok" {
			return fmt.Errorf("/readyz says %q", body)
		}
		c.CAData = ca
		return nil
	}); err != nil {
		return err
	}

	return nil
}

// RestartAPIServer kills kube-apiserver with SIGKILL, as a crash would, and
// starts it again with the same flags, data and certificates; it returns
// once the new one is ready. Watches through it break and resume.
func (c *ControlPlane) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p, bin := c.APIServer, c.apiServerBin
	c.mu.Unlock()
	if err := p.Kill(); err != nil {
		return err
	}
	return c.runAPIServer(ctx, bin)
}

// controllerManagerControllers are the only controllers worth running where
// nothing runs pods: owned objects go with their owner, deleted namespaces
// are emptied and go away, and aggregated ClusterRoles (config/'s Foo rules
// in the built-in admin, edit and view) are filled in.
var controllerManagerControllers = []string{"garbage-collector-controller", "namespace-controller", "clusterrole-aggregation-controller"}

func (c *ControlPlane) startControllerManager(ctx context.Context, bin string, port int) error {
	certDir := filepath.Join(c.Dir, "controller-manager-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", certDir, err)
	}
	p, err := c.startChild("kube-controller-manager", bin,
		"--kubeconfig="+c.AdminKubeconfig,
		"--controllers="+strings.Join(controllerManagerControllers, ","),
		"--leader-elect=false",
		// Served only so that Start can tell when the controllers run.
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+certDir,
		"--use-service-account-credentials=false",
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	c.ControllerManager = p

	// A controller's health check is registered when the controller is
	// built, just before it starts; until then the verbose /healthz does
	// not list it.
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz?verbose"
	certFile := filepath.Join(certDir, "kube-controller-manager.crt")
	return waitFor(ctx, p, func(ctx context.Context) error {
		ca, err := os.ReadFile(certFile)
		if err != nil {
			return fmt.Errorf("no serving certificate yet: %w", err)
		}
		client, err := tlsClient(ca)
		if err != nil {
			return err
		}
		body, err := get(ctx, client, url, "")
		if err != nil {
			return err
		}
		for _, name := range controllerManagerControllers {
			if !strings.Contains(body, "[+]"+name+" ok") {
				return fmt.Errorf("%s is not running yet", name)
			}
		}
		return nil
	})
}

// waitFor polls check until it succeeds, the process exits, ctx ends or
// readyTimeout passes.
func waitFor(ctx context.Context, p *Process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		attemptCtx, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		err := check(attemptCtx)
		cancelAttempt()
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return p.exitedEarly()
		case <-ctx.Done():
			return fmt.Errorf("%s (pid %d) was not ready in time (%w): last check: %v%s", p.Name, p.PID(), ctx.Err(), err, p.logTailForError())
		case <-ticker.C:
		}
	}
}

// get returns the body of a successful GET.
func get(ctx context.Context, client *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// tlsClient returns a client that trusts only the given PEM bundle.
func tlsClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in the serving certificate file yet")
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}, nil
}

// writeServiceAccountKeys writes the RSA pair that signs and verifies
// ServiceAccount tokens, and returns the paths of the public and the private
// key.
func writeServiceAccountKeys(dir string) (string, string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("failed to generate the service account signing key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("failed to encode the service account public key: %w", err)
	}
	pubPath, privPath := filepath.Join(dir, "sa.pub"), filepath.Join(dir, "sa.key")
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", "", fmt.Errorf("failed to write %s: %w", pubPath, err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(privPath, priv, 0o600); err != nil {
		return "", "", fmt.Errorf("failed to write %s: %w", privPath, err)
	}
	return pubPath, privPath, nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("failed to generate the admin token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// auditPolicy records what ServiceAccounts do, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`
