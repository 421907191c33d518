package remote_test

import (
	"github.com/convcache/convcache/remote/internal/redistest"

	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convcache/convcache/cache"
	"github.com/convcache/convcache/remote"
)

// The multi-process tests run this test binary again as a "node": a
// separate process with its own cache file and its own client, as on
// another machine. NODE_ROLE selects what it does.
func TestMain(m *testing.M) {
	if role := os.Getenv("NODE_ROLE"); role != "" {
		if err := node(role); err != nil {
			fmt.Fprintf(os.Stderr, "node %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func node(role string) error {
	n, _ := strconv.Atoi(os.Getenv("NODE_N"))
	// Deadlines and TTLs far beyond what a loaded machine takes: a slow
	// renewal must not lapse the race's lock, nor a slow reply fail the
	// tier open. The holder's TTL is what TestLockHolderKilled measures.
	o := remote.Options{URL: os.Getenv("NODE_URL"), Timeout: 30 * time.Second, LockTTL: time.Minute,
		MACKey: []byte(os.Getenv("NODE_MAC_KEY"))}
	if role == "hold" {
		o.LockTTL = holdTTL
	}
	r, err := remote.New(o)
	if err != nil {
		return err
	}
	if role == "tls" {
		w := &syncBuffer{}
		r, err := remote.New(remote.Options{URL: os.Getenv("NODE_URL"), Timeout: 30 * time.Second, Warn: w})
		if err != nil {
			return err
		}
		r.Put("s", []byte("k"), []byte("over TLS"))
		r.Flush()
		if v, ok := r.Get("s", []byte("k")); !ok || string(v) != "over TLS" {
			return fmt.Errorf("get over TLS: %q %v %+v: %s", v, ok, r.Stats(), w)
		}
		fmt.Println("tls ok")
		return nil
	}
	if role == "hold" {
		// Take the lock and die without releasing it.
		if _, ok := r.TryLock("test-scope", []byte("cold shape")); !ok {
			return fmt.Errorf("lock refused")
		}
		fmt.Println("locked")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	c, err := cache.Open(os.Getenv("NODE_PATH"), &cache.Options{Scope: "test-scope", Remote: r})
	if err != nil {
		return err
	}
	defer c.Close()
	switch role {
	case "insert":
		for i := 0; i < n; i++ {
			if err := c.Insert(key(i), value(i)); err != nil {
				return err
			}
		}
		return c.Save()
	case "find":
		for i := 0; i < n; i++ {
			v, ok, err := c.Get(key(i))
			if err != nil || !ok || !bytes.Equal(v, value(i)) {
				return fmt.Errorf("key %d: %q %v %v", i, v, ok, err)
			}
		}
		st := c.Stats()
		fmt.Printf("remote_hits=%d misses=%d\n", st.Remote.Hits, st.Misses)
		return nil
	case "race":
		os.WriteFile(os.Getenv("NODE_READY"), nil, 0o600)
		for { // all nodes start together
			if _, err := os.Stat(os.Getenv("NODE_GATE")); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		dst := make([]byte, 64)
		k := []byte("one cold shape")
		n, built, err := c.GetOrCreate(k, dst, func(d []byte) (int, error) {
			f, err := os.OpenFile(os.Getenv("NODE_COUNT"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				return 0, err
			}
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			time.Sleep(300 * time.Millisecond) // the benchmark
			return copy(d, fmt.Sprintf("built by %d", os.Getpid())), nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("%s built=%v\n", dst[:n], built)
		return nil
	}
	return fmt.Errorf("unknown role")
}

func startNode(t *testing.T, role string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives the test
	cmd.Env = append(os.Environ(), append([]string{"NODE_ROLE=" + role}, env...)...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func runNode(t *testing.T, role string, env ...string) string {
	t.Helper()
	cmd, out := startNode(t, role, env...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node %s: %v\n%s", role, err, out)
	}
	return out.String()
}

// Two processes with separate files share one server: node B's first
// lookups are remote hits for what node A inserted. With a MAC key they are
// written to B's file; without one they stay in B's memory, so B's next run
// asks the server again.
func TestTwoNodes(t *testing.T) {
	srv := startRedis(t)
	for _, tc := range []struct {
		name, key, again string
	}{
		{"MAC key", string(clusterKey), "remote_hits=0 misses=0"},
		{"no key", "", "remote_hits=200 misses=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"NODE_URL=" + srv.url(), "NODE_N=200", "NODE_MAC_KEY=" + tc.key}
			runNode(t, "insert", append(env, "NODE_PATH="+filepath.Join(dir, "a.ccdb"))...)
			out := runNode(t, "find", append(env, "NODE_PATH="+filepath.Join(dir, "b.ccdb"))...)
			if !strings.Contains(out, "remote_hits=200 misses=0") {
				t.Fatalf("node B: %s", out)
			}
			// A second run of B: from its own file with a key, else from
			// the server again.
			out = runNode(t, "find", append(env, "NODE_PATH="+filepath.Join(dir, "b.ccdb"))...)
			if !strings.Contains(out, tc.again) {
				t.Fatalf("node B again: %s, want %s", out, tc.again)
			}
		})
	}
}

// Four processes with separate files ask for one cold key at once: the
// builder runs once in the cluster, and all four get its value.
func TestClusterSingleFlight(t *testing.T) {
	srv := startRedis(t)
	dir := t.TempDir()
	gate, count := filepath.Join(dir, "gate"), filepath.Join(dir, "count")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 4; i++ {
		cmd, out := startNode(t, "race", "NODE_URL="+srv.url(),
			"NODE_PATH="+filepath.Join(dir, fmt.Sprintf("node%d.ccdb", i)),
			"NODE_READY="+filepath.Join(dir, fmt.Sprintf("ready%d", i)),
			"NODE_GATE="+gate, "NODE_COUNT="+count)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	waitFor(30*time.Second, func() bool {
		for i := 0; i < 4; i++ {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ready%d", i))); err != nil {
				return false
			}
		}
		return true
	})
	os.WriteFile(gate, nil, 0o600)
	values := map[string]int{}
	builtCount := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node %d: %v\n%s", i, err, outs[i])
		}
		v, built, _ := strings.Cut(strings.TrimSpace(outs[i].String()), " built=")
		values[v]++
		if built == "true" {
			builtCount++
		}
	}
	b, _ := os.ReadFile(count)
	if runs := strings.Count(string(b), "\n"); runs != 1 || builtCount != 1 || len(values) != 1 {
		t.Fatalf("builder ran %d times (%d nodes say they built); values %v", runs, builtCount, values)
	}
}

// holdTTL is the lock TTL of the node TestLockHolderKilled kills: long
// enough that the lock is certainly still held when the test first looks.
const holdTTL = 3 * time.Second

// A lock holder killed with SIGKILL frees the lock by its TTL.
func TestLockHolderKilled(t *testing.T) {
	srv := startRedis(t)
	cmd, out := startNode(t, "hold", "NODE_URL="+srv.url())
	err := cmd.Wait()
	died := time.Now()
	if !strings.Contains(out.String(), "locked") {
		t.Fatalf("holder: %v\n%s", err, out)
	}
	r, _ := newRemote(t, srv.url(), nil)
	k := []byte("cold shape")
	if _, ok := r.TryLock("test-scope", k); ok {
		t.Fatal("lock free at once: the dead holder's TTL should hold it a while")
	}
	var freed time.Duration
	if !waitFor(30*time.Second, func() bool {
		_, ok := r.TryLock("test-scope", k)
		freed = time.Since(died)
		return ok
	}) {
		t.Fatal("lock never freed")
	}
	if freed > holdTTL+slack {
		t.Fatalf("freed %v after the holder died; its TTL is %v", freed, holdTTL)
	}
}

// rediss:// verifies the server's certificate: a node that trusts the
// test's own CA (SSL_CERT_FILE) stores and finds values over TLS; one that
// does not fails open with the warning.
func TestTLS(t *testing.T) {
	bin := redisBinary(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	srv := startServer(t, &redistest.Server{Bin: bin, Dir: dir, TLSCert: certFile, TLSKey: keyFile})
	url := "rediss://" + srv.addr() + "/0"
	out := runNode(t, "tls", "NODE_URL="+url, "SSL_CERT_FILE="+certFile, "SSL_CERT_DIR="+dir)
	if !strings.Contains(out, "tls ok") {
		t.Fatalf("TLS node: %s", out)
	}
	// Without the CA: the certificate is refused, and the tier fails open.
	cmd, buf := startNode(t, "tls", "NODE_URL="+url, "SSL_CERT_FILE=/dev/null", "SSL_CERT_DIR=/nonexistent")
	if err := cmd.Wait(); err == nil || !strings.Contains(buf.String(), "certificate") {
		t.Fatalf("a node without the CA: %v\n%s", err, buf)
	}
}

func writeCert(t *testing.T, certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "convcache test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
