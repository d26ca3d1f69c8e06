package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/electorhq/elector/gateway"
)

// RunKV runs the conformance suite of gateway.KV against the store newKV
// returns; each subtest gets its own key prefix, so one store may serve
// them all. A backend's test calls it beside Run:
//
//	func TestKV(t *testing.T) {
//		backendtest.RunKV(t, func(t *testing.T) gateway.KV { return newBackend(t) })
//	}
func RunKV(t *testing.T, newKV func(t *testing.T) gateway.KV) {
	kv := newKV(t)
	tests := []struct {
		name string
		fn   func(t *testing.T, kv gateway.KV, prefix string)
	}{
		{"GetMissingKeyIsNotFound", testKVGetMissing},
		{"CreateThenGet", testKVCreateGet},
		{"CreateExistingIsARevisionMismatch", testKVCreateExisting},
		{"UpdateIsCompareAndSet", testKVUpdateCAS},
		{"UpdateOfMissingKeyIsARevisionMismatch", testKVUpdateMissing},
		{"DeleteIsCompareAndSet", testKVDelete},
		{"CreateAfterDelete", testKVCreateAfterDelete},
		{"ListReturnsKeysUnderPrefixOnly", testKVList},
		{"InvalidKeysAreRefused", testKVInvalidKeys},
		{"ConcurrentUpdatesLoseNoIncrement", testKVConcurrentCAS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, kv, name("kv"))
		})
	}
}

func testKVGetMissing(t *testing.T, kv gateway.KV, p string) {
	if _, err := kv.Get(context.Background(), p+"/missing"); !errors.Is(err, gateway.ErrKeyNotFound) {
		t.Fatalf("get of a missing key: %v, want ErrKeyNotFound", err)
	}
}

func testKVCreateGet(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	rev, err := kv.Create(ctx, p+"/a", []byte(`{"x":1}`))
	if err != nil || rev == 0 {
		t.Fatalf("create: rev %d, %v", rev, err)
	}
	it, err := kv.Get(ctx, p+"/a")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if it.Key != p+"/a" || !bytes.Equal(it.Value, []byte(`{"x":1}`)) || it.Revision != rev {
		t.Fatalf("get: %+v, want value {\"x\":1} at revision %d", it, rev)
	}
	// An empty value is a value.
	if _, err := kv.Create(ctx, p+"/empty", nil); err != nil {
		t.Fatalf("create empty: %v", err)
	}
	if it, err := kv.Get(ctx, p+"/empty"); err != nil || len(it.Value) != 0 {
		t.Fatalf("get empty: %+v, %v", it, err)
	}
}

func testKVCreateExisting(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	if _, err := kv.Create(ctx, p+"/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, p+"/a", []byte("2")); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("second create: %v, want ErrRevisionMismatch", err)
	}
	if it, _ := kv.Get(ctx, p+"/a"); string(it.Value) != "1" {
		t.Fatalf("value %q after a refused create, want 1", it.Value)
	}
}

func testKVUpdateCAS(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	r1, err := kv.Create(ctx, p+"/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Update(ctx, p+"/a", []byte("2"), r1)
	if err != nil || r2 == r1 {
		t.Fatalf("update at the current revision: rev %d (was %d), %v", r2, r1, err)
	}
	if _, err := kv.Update(ctx, p+"/a", []byte("3"), r1); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("update at a stale revision: %v, want ErrRevisionMismatch", err)
	}
	it, err := kv.Get(ctx, p+"/a")
	if err != nil || string(it.Value) != "2" || it.Revision != r2 {
		t.Fatalf("get: %+v, %v; want 2 at revision %d", it, err, r2)
	}
}

func testKVUpdateMissing(t *testing.T, kv gateway.KV, p string) {
	if _, err := kv.Update(context.Background(), p+"/nope", []byte("1"), 1); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("update of a missing key: %v, want ErrRevisionMismatch", err)
	}
}

func testKVDelete(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	r1, _ := kv.Create(ctx, p+"/a", []byte("1"))
	r2, err := kv.Update(ctx, p+"/a", []byte("2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, p+"/a", r1); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("delete at a stale revision: %v, want ErrRevisionMismatch", err)
	}
	if err := kv.Delete(ctx, p+"/a", r2); err != nil {
		t.Fatalf("delete at the current revision: %v", err)
	}
	if _, err := kv.Get(ctx, p+"/a"); !errors.Is(err, gateway.ErrKeyNotFound) {
		t.Fatalf("get after delete: %v, want ErrKeyNotFound", err)
	}
	if err := kv.Delete(ctx, p+"/a", 0); err != nil {
		t.Fatalf("unconditional delete of a missing key: %v, want nil", err)
	}
	if err := kv.Delete(ctx, p+"/a", r2); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("conditional delete of a missing key: %v, want ErrRevisionMismatch", err)
	}
	r3, _ := kv.Create(ctx, p+"/b", []byte("1"))
	if err := kv.Delete(ctx, p+"/b", 0); err != nil || r3 == 0 {
		t.Fatalf("unconditional delete: %v", err)
	}
}

func testKVCreateAfterDelete(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	r1, _ := kv.Create(ctx, p+"/a", []byte("1"))
	if err := kv.Delete(ctx, p+"/a", r1); err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Create(ctx, p+"/a", []byte("2"))
	if err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	if _, err := kv.Update(ctx, p+"/a", []byte("3"), r1); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("update with the revision of the deleted key: %v, want ErrRevisionMismatch", err)
	}
	if _, err := kv.Update(ctx, p+"/a", []byte("3"), r2); err != nil {
		t.Fatalf("update of the re-created key: %v", err)
	}
}

func testKVList(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	for _, k := range []string{"x/1", "x/2", "x/sub/3", "xy/4", "y/5"} {
		if _, err := kv.Create(ctx, p+"/"+k, []byte(k)); err != nil {
			t.Fatalf("create %s: %v", k, err)
		}
	}
	keys := func(prefix string) []string {
		items, err := kv.List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		var out []string
		for _, it := range items {
			if string(it.Value) != it.Key[len(p)+1:] || it.Revision == 0 {
				t.Errorf("list %s: item %+v has the wrong value or no revision", prefix, it)
			}
			out = append(out, it.Key[len(p)+1:])
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(p+"/x"), []string{"x/1", "x/2", "x/sub/3"}; !slices.Equal(got, want) {
		t.Errorf("list x: %v, want %v (not xy/4: prefixes are whole segments)", got, want)
	}
	if got, want := keys(p), []string{"x/1", "x/2", "x/sub/3", "xy/4", "y/5"}; !slices.Equal(got, want) {
		t.Errorf("list all: %v, want %v", got, want)
	}
	if got := keys(p + "/none"); len(got) != 0 {
		t.Errorf("list of an empty prefix: %v", got)
	}
	all, err := kv.List(ctx, "")
	if err != nil || len(all) < 5 {
		t.Errorf(`list "": %d items, %v`, len(all), err)
	}
}

func testKVInvalidKeys(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	for _, k := range []string{"", "/", p + "/", "/" + p, p + "//a", p + "/a.b", p + "/a b", p + "/é", p + "/*", p + "/>"} {
		if _, err := kv.Create(ctx, k, []byte("1")); !errors.Is(err, gateway.ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", k, err)
		}
		if _, err := kv.Get(ctx, k); !errors.Is(err, gateway.ErrInvalid) {
			t.Errorf("get %q: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := kv.Create(ctx, p+"/big", make([]byte, gateway.MaxValueBytes+1)); !errors.Is(err, gateway.ErrInvalid) {
		t.Errorf("create of a value over MaxValueBytes: %v, want ErrInvalid", err)
	}
}

// testKVConcurrentCAS increments one counter from many goroutines with
// read-modify-compare-and-set: no increment may be lost.
func testKVConcurrentCAS(t *testing.T, kv gateway.KV, p string) {
	ctx := context.Background()
	key := p + "/counter"
	if _, err := kv.Create(ctx, key, []byte("0")); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				for {
					it, err := kv.Get(ctx, key)
					if err != nil {
						errs <- err
						return
					}
					var n int
					_, _ = fmt.Sscan(string(it.Value), &n)
					_, err = kv.Update(ctx, key, []byte(fmt.Sprint(n+1)), it.Revision)
					if err == nil {
						break
					}
					if !errors.Is(err, gateway.ErrRevisionMismatch) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("increment: %v", err)
	}
	it, err := kv.Get(ctx, key)
	if err != nil || string(it.Value) != fmt.Sprint(workers*each) {
		t.Fatalf("counter %q, %v; want %d", it.Value, err, workers*each)
	}
}
