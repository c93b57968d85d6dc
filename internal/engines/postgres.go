package engines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Postgres is a PostgreSQL server for tests: initdb in a temporary data
// directory, postgres on a free loopback port (TCP only, no Unix socket),
// password authentication for the user "runner". Stop it, and its data
// directory goes.
//
// postgres refuses to run as root. When the tests run as root, initdb and
// postgres run as the unprivileged user "nobody" (its uid and gid set on
// the processes by the kernel, no su or sudo): the data directory is made
// for and owned by that user, and removed by the test process after.
type Postgres struct {
	e *Engine
	// URL is postgres://runner@127.0.0.1:PORT/postgres (no password);
	// Password is the user's, for PGPASSWORD.
	URL      string
	Password string
	Port     int
	dataDir  string
}

// pgBinDirs are where Debian's postgresql package puts the server.
func pgBinDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // the newest version first
	return dirs
}

// pgBin finds initdb and postgres: in PATH, or in Debian's directory.
func pgBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	for _, d := range pgBinDirs() {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", &UnavailableError{Reason: "no PostgreSQL server (initdb, postgres) in PATH or /usr/lib/postgresql/*/bin; .ci/run installs Debian's postgresql package"}
}

// StartPostgres starts a PostgreSQL server for the test binary.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	cred, uid, gid, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "runner-pg-")
	if err != nil {
		return nil, err
	}
	pg := &Postgres{dataDir: dir, Password: randomHex(16)}
	if err := pg.initdb(ctx, bin, cred, uid, gid); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var last error
	for range 3 { // a port taken between choosing and binding: another one
		if last = pg.start(ctx, bin, cred); last == nil {
			return pg, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, last
}

// pgCredential is who runs the server: nobody when we are root, else us.
func pgCredential() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, os.Getuid(), os.Getgid(), nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, 0, 0, &UnavailableError{Reason: "running as root and there is no user nobody to run postgres as: " + err.Error()}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, uid, gid, nil
}

func (pg *Postgres) initdb(ctx context.Context, bin string, cred *syscall.Credential, uid, gid int) error {
	data := filepath.Join(pg.dataDir, "data")
	pwfile := filepath.Join(pg.dataDir, "pw")
	if err := os.WriteFile(pwfile, []byte(pg.Password+"\n"), 0o600); err != nil {
		return err
	}
	for _, p := range []string{pg.dataDir, pwfile} {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "runner", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir = pg.dataDir
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

func (pg *Postgres) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	e := &Engine{Name: "postgres", done: make(chan struct{}), log: &tail{max: 64 << 10}}
	e.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(pg.dataDir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port), "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	e.cmd.Dir = pg.dataDir
	e.cmd.Env = []string{"LC_ALL=C"}
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	// Pdeathsig: the server dies with the test binary; its own children
	// follow their postmaster.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := e.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	if err := waitPort(ctx, e, port, time.Minute); err != nil {
		e.Stop()
		return fmt.Errorf("postgres on port %d: %w\n%s", port, err, e.Log())
	}
	pg.e, pg.Port = e, port
	pg.URL = "postgres://runner@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable"
	return nil
}

// waitPort waits until the server accepts connections and has left its
// start-up (a connection during recovery is refused by the server, which
// the caller's first query would see).
func waitPort(ctx context.Context, e *Engine, port int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			if pgReady(e.Log()) {
				return nil
			}
		}
		select {
		case <-e.done:
			return fmt.Errorf("exited before it was ready (%v)", e.cmd.ProcessState)
		case <-ctx.Done():
			return errors.New("not ready after " + timeout.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pgReady reports whether the server's log says it accepts connections.
func pgReady(log string) bool {
	return strings.Contains(log, "database system is ready to accept connections")
}

// Stop stops the server (SIGINT: a fast shutdown; SIGKILL after 10 s) and
// removes its data directory.
func (pg *Postgres) Stop() {
	if pg == nil {
		return
	}
	if e := pg.e; e != nil {
		_ = e.cmd.Process.Signal(syscall.SIGINT) // fast shutdown: no waiting for clients
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		}
	}
	_ = os.RemoveAll(pg.dataDir)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
