package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

func BenchmarkApplyCreateFlavor(b *testing.B) {
	entries := make([][]byte, b.N)
	for i := range entries {
		f := testFlavor(fmt.Sprintf("f%d", i), fmt.Sprintf("flavor-%d", i))
		f.ExtraSpecs = map[string]string{"resources:CUSTOM_GOLD": "1"}
		entries[i] = mustEncode(b, &CreateFlavor{Meta: at(i), Flavor: f})
	}
	s := New()
	b.ReportAllocs()
	b.ResetTimer()
	for i, e := range entries {
		if r := s.Apply(uint64(i+1), e); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

func storeWithFlavors(b *testing.B, n int) *Store {
	s := New()
	for i := range n {
		f := testFlavor(fmt.Sprintf("f%05d", i), fmt.Sprintf("flavor-%05d", i))
		f.ExtraSpecs = map[string]string{"resources:CUSTOM_GOLD": "1", "capabilities:boot_mode": "uefi"}
		if r := s.Apply(uint64(i+1), mustEncode(b, &CreateFlavor{Meta: at(i), Flavor: f})); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	return s
}

func BenchmarkSnapshot10kFlavors(b *testing.B) {
	s := storeWithFlavors(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Snapshot().WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRestore10kFlavors(b *testing.B) {
	data := snapshotBytes(b, storeWithFlavors(b, 10_000))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	s := New()
	for b.Loop() {
		if err := s.Restore(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
