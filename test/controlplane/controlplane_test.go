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
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// helperEnv makes the test binary act as a child process that ignores
// SIGTERM, to test the escalation to SIGKILL.
const helperEnv = "CONTROLPLANE_TEST_IGNORE_SIGTERM"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startControlPlane starts a control plane for t, stops it when t ends and,
// if t failed, logs the tail of every process's log.
func startControlPlane(t *testing.T, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver built by hack/build-tools.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts.Dir = t.TempDir()
	start := time.Now()
	cp, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Logf("Start took %s; API server at %s", time.Since(start).Round(time.Millisecond), cp.URL)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*Process{cp.Etcd, cp.APIServer, cp.ControllerManager} {
				if p != nil {
					t.Logf("--- %s log ---\n%s", p.Name, p.LogTail())
				}
			}
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop() = %v", err)
		}
	})
	return cp
}

func TestControlPlane(t *testing.T) {
	cp := startControlPlane(t, Options{ControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	processes := []*Process{cp.Etcd, cp.APIServer, cp.ControllerManager}
	for _, p := range processes {
		if rss, err := residentMemory(p.PID()); err == nil {
			t.Logf("%s (pid %d) uses %d MiB", p.Name, p.PID(), rss>>20)
		}
		addrs, err := listeningAddresses(p.PID())
		if err != nil {
			t.Fatalf("listening addresses of %s: %v", p.Name, err)
		}
		for _, addr := range addrs {
			if !addr.IP.IsLoopback() {
				t.Errorf("%s listens on %s, want 127.0.0.1 only", p.Name, addr)
			}
		}
	}

	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig)
	const ns, saName = "rbac-test", "reconciler"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saName}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create service account: %v", err)
	}

	t.Run("admin kubeconfig works", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
		if err != nil {
			t.Fatalf("failed to load %s: %v", cp.AdminKubeconfig, err)
		}
		if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("get namespace with the admin kubeconfig: %v", err)
		}
	})

	t.Run("RBAC applies to a service account", func(t *testing.T) {
		path, _, err := cp.KubeconfigForServiceAccount(ctx, ns, saName, 15*time.Minute)
		if err != nil {
			t.Fatalf("KubeconfigForServiceAccount() = %v", err)
		}
		// Use the file, as a process started with KUBECONFIG would.
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("failed to load %s: %v", path, err)
		}
		sa := kubernetes.NewForConfigOrDie(cfg)

		review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectReview as the service account: %v", err)
		}
		if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+ns+":"+saName; got != want {
			t.Errorf("service account authenticates as %q, want %q", got, want)
		}

		if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrs.IsForbidden(err) {
			t.Errorf("service account lists secrets: err = %v, want Forbidden", err)
		}
		if _, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("admin lists secrets: %v", err)
		}

		// Granting the permission lets the same token through, so the
		// refusal above came from RBAC.
		grantListSecrets(ctx, t, admin, ns, saName)
		pollUntil(ctx, t, 30*time.Second, "the service account may list secrets", func() (bool, error) {
			_, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			if apierrs.IsForbidden(err) {
				return false, nil
			}
			return err == nil, err
		})
	})

	t.Run("garbage collector deletes what a deleted owner owned", func(t *testing.T) {
		owner, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("failed to create owner: %v", err)
		}
		dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "dependent",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}},
		}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
			t.Fatalf("failed to create dependent: %v", err)
		}
		if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("failed to delete owner: %v", err)
		}
		pollUntil(ctx, t, time.Minute, "the dependent is deleted", func() (bool, error) {
			_, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, dependent.Name, metav1.GetOptions{})
			if apierrs.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})

	t.Run("a deleted namespace goes away", func(t *testing.T) {
		if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("failed to delete namespace: %v", err)
		}
		pollUntil(ctx, t, time.Minute, "the namespace is gone", func() (bool, error) {
			_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrs.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})

	stopAndCheckGone(t, cp, processes)
}

func TestAdapter(t *testing.T) {
	cp := startControlPlane(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig)
	const ns = "events"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create namespace: %v", err)
	}

	events := make(chan http.Header, 100)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case events <- r.Header.Clone():
		default:
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()

	adapter, err := cp.StartAdapter("configmaps", ns, sink.URL, AdapterConfig{
		Namespaces: []string{ns},
		Resources:  []AdapterResource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}},
		Mode:       "Resource",
	}, "")
	if err != nil {
		t.Fatalf("StartAdapter() = %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", adapter.Name, adapter.LogTail())
		}
	})

	// The adapter says nothing when its watch is up, so create canaries
	// until one is reported.
	var got http.Header
	deadline := time.After(time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; got == nil; i++ {
		name := "canary-" + strconv.Itoa(i)
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("failed to create %s: %v", name, err)
		}
	wait:
		for {
			select {
			case h := <-events:
				if h.Get("Ce-Type") == "dev.knative.apiserver.resource.add" && strings.HasPrefix(h.Get("Ce-Name"), "canary-") {
					got = h
					break wait
				}
			case <-tick.C:
				break wait
			case <-adapter.Done():
				t.Fatalf("adapter exited: %v", adapter.Wait())
			case <-deadline:
				t.Fatal("no add event reached the sink within a minute")
			}
		}
	}
	want := map[string]string{
		"Ce-Source":    cp.URL,
		"Ce-Kind":      "ConfigMap",
		"Ce-Namespace": ns,
		"Ce-Subject":   "/apis/v1/namespaces/" + ns + "/configmaps/" + got.Get("Ce-Name"),
	}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("event header %s = %q, want %q", k, got.Get(k), v)
		}
	}

	if rss, err := residentMemory(adapter.PID()); err == nil {
		t.Logf("%s (pid %d) uses %d MiB", adapter.Name, adapter.PID(), rss>>20)
	}
	addrs, err := listeningAddresses(adapter.PID())
	if err != nil {
		t.Fatalf("listening addresses of the adapter: %v", err)
	}
	if len(addrs) > 0 {
		t.Errorf("adapter listens on %v, want nothing", addrs)
	}

	stopAndCheckGone(t, cp, []*Process{adapter, cp.Etcd, cp.APIServer})
}

func TestStartFailureStopsWhatStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd built by hack/build-tools.sh")
	}
	dir := t.TempDir()
	// The API server's token file cannot be written over a directory, so
	// Start fails after etcd is up.
	if err := os.Mkdir(filepath.Join(dir, "tokens.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	cp, err := Start(context.Background(), Options{Dir: dir})
	if err == nil {
		cp.Stop()
		t.Fatal("Start() succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "tokens.csv") {
		t.Errorf("Start() = %v, want an error about tokens.csv", err)
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("processes %v still run with %s in their command line", pids, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd.log")); err != nil {
		t.Errorf("Start() removed a directory it was given: %v", err)
	}
}

func TestProcessStop(t *testing.T) {
	dir := t.TempDir()

	t.Run("an early exit quotes the log", func(t *testing.T) {
		p, err := startProcess("failing", exec.Command("sh", "-c", "echo starting; echo boom >&2; exit 3"), dir, nil, 0)
		if err != nil {
			t.Fatalf("startProcess() = %v", err)
		}
		var exitErr *exec.ExitError
		if err := p.Wait(); !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
			t.Fatalf("Wait() = %v, want exit status 3", err)
		}
		if err := p.exitedEarly(); !strings.Contains(err.Error(), "starting\nboom") {
			t.Errorf("exitedEarly() = %q, want the log's last lines", err)
		}
		if err := p.Stop(); err != nil {
			t.Errorf("Stop() of an exited process = %v", err)
		}
	})

	t.Run("SIGKILL follows an ignored SIGTERM", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=1")
		p, err := startProcess("stubborn", cmd, dir, nil, 500*time.Millisecond)
		if err != nil {
			t.Fatalf("startProcess() = %v", err)
		}
		pollUntil(context.Background(), t, 30*time.Second, "the child ignores SIGTERM", func() (bool, error) {
			return strings.Contains(p.LogTail(), "ignoring SIGTERM"), nil
		})
		start := time.Now()
		if err := p.Stop(); err != nil {
			t.Fatalf("Stop() = %v", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Stop() took %s", took)
		}
		var exitErr *exec.ExitError
		if err := p.Wait(); !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("Wait() = %v, want killed by SIGKILL", err)
		}
		if !strings.Contains(p.LogTail(), "sending SIGKILL") {
			t.Errorf("log does not say that SIGKILL was sent:\n%s", p.LogTail())
		}
	})
}

// stopAndCheckGone stops cp twice and checks that the processes have exited
// and that their PIDs no longer exist.
func stopAndCheckGone(t *testing.T, cp *ControlPlane, processes []*Process) {
	t.Helper()
	start := time.Now()
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	t.Logf("Stop took %s", time.Since(start).Round(time.Millisecond))
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop() = %v", err)
	}
	for _, p := range processes {
		if !p.Exited() {
			t.Errorf("%s (pid %d) has not exited", p.Name, p.PID())
		}
		if err := syscall.Kill(p.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: kill(%d, 0) = %v, want ESRCH", p.Name, p.PID(), err)
		}
	}
	if _, err := cp.StartProcess("late", exec.Command("true")); err == nil {
		t.Error("StartProcess() after Stop() succeeded")
	}
}

func grantListSecrets(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns, sa string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "list-secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "list-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to create role binding: %v", err)
	}
}

// pollUntil calls done every 100ms until it returns true, failing t on an
// error or after timeout.
func pollUntil(ctx context.Context, t *testing.T, timeout time.Duration, what string, done func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up after %s waiting until %s", timeout, what)
		case <-tick.C:
		}
	}
}

// processesMentioning returns the PIDs of processes whose command line
// contains s.
func processesMentioning(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// residentMemory returns a process's resident set size in bytes.
func residentMemory(pid int) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "VmRSS:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			return kib << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

// listeningAddresses returns the TCP addresses a process listens on, by
// matching the socket inodes among its file descriptors with the listening
// sockets in /proc/net/tcp and tcp6.
func listeningAddresses(pid int) ([]*net.TCPAddr, error) {
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []*net.TCPAddr
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "net", table))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			addr, err := parseProcNetAddr(fields[1])
			if err != nil {
				return nil, err
			}
			addrs = append(addrs, addr)
		}
	}
	return addrs, nil
}

// parseProcNetAddr parses /proc/net/tcp's "0100007F:1F90": an IP in host
// byte order, 32 bits at a time, and a port in hex.
func parseProcNetAddr(s string) (*net.TCPAddr, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil {
		return nil, fmt.Errorf("bad address %q: %w", s, err)
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port in %q: %w", s, err)
	}
	return &net.TCPAddr{IP: net.IP(raw), Port: int(port)}, nil
}

// An offset past the audit log's end (the log rotated since) is an error
// that says so, not a panic nor an empty read.
func TestReadAuditLogPastItsEnd(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(`{"stage":"ResponseComplete"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadAuditLog(log, 1000, "", ""); err == nil || !strings.Contains(err.Error(), "rotated") {
		t.Errorf("reading from past the end: %v; want an error that the log was rotated", err)
	}
	if _, end, err := ReadAuditLog(log, 0, "", ""); err != nil || end != 29 {
		t.Errorf("reading from 0: end %d, %v; want 29, nil", end, err)
	}
}
