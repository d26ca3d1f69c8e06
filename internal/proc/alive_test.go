package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

func TestAliveAndLiveInGroup(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("Alive(self) = false")
	}
	// A group of two: sh and its sleeping child.
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() })
	eventually.True(t, 10*time.Second, "both processes of the group to run", func() bool { return LiveInGroup(pid) == 2 })
	if !Alive(pid) {
		t.Fatal("Alive(started child) = false")
	}

	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// sh is not reaped yet: a zombie, which is not alive, nor counted.
	eventually.True(t, 10*time.Second, "the killed group to be gone", func() bool { return LiveInGroup(pid) == 0 && !Alive(pid) })
	_ = cmd.Wait()
	if Alive(pid) {
		t.Fatal("Alive(reaped child) = true")
	}
}
