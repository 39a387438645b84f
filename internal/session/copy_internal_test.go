package session

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/wake"
)

// Stand-ins for the interfaces a store's fields hold: distinct non-nil
// values a copy must keep.
type (
	fakeFacts   struct{ FactLog }
	fakeStreams struct{ StreamStore }
	fakeWaker   struct{ wake.Waker }
	fakeBroker  struct{ claims.Broker }
)

// setEvery sets every field of the struct v points into to a non-zero
// value of its type, failing for a type it cannot make one of.
func setEvery(t *testing.T, v reflect.Value) {
	t.Helper()
	ifaces := map[reflect.Type]any{
		reflect.TypeFor[FactLog]():       &fakeFacts{},
		reflect.TypeFor[StreamStore]():   &fakeStreams{},
		reflect.TypeFor[wake.Waker]():    &fakeWaker{},
		reflect.TypeFor[claims.Broker](): &fakeBroker{},
	}
	for i := range v.NumField() {
		f, sf := open(v.Field(i)), v.Type().Field(i)
		switch f.Kind() {
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Interface:
			x, ok := ifaces[f.Type()]
			if !ok {
				t.Fatalf("field %s of %s: no value for type %s; add one to setEvery", sf.Name, v.Type(), f.Type())
			}
			f.Set(reflect.ValueOf(x))
		case reflect.String:
			f.SetString("set")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(7)
		case reflect.Struct:
			setEvery(t, f)
		default:
			t.Fatalf("field %s of %s: setEvery cannot set a %s; add it", sf.Name, v.Type(), f.Kind())
		}
	}
}

// open is field f of an addressable struct, settable and readable even
// when unexported (the store's stores are).
func open(f reflect.Value) reflect.Value {
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// sameFields reports the fields of structs a and b that differ: funcs
// compare by code pointer, everything else by value.
func sameFields(a, b reflect.Value) []string {
	var differ []string
	for i := range a.NumField() {
		fa, fb := open(a.Field(i)), open(b.Field(i))
		same := reflect.DeepEqual(fa.Interface(), fb.Interface())
		if fa.Kind() == reflect.Func {
			same = fa.Pointer() == fb.Pointer()
		}
		if !same {
			differ = append(differ, a.Type().Field(i).Name)
		}
	}
	return differ
}

// childrenCore is the core s's children work on: kids.Store holds it,
// unexported, as its Core, a childCore.
func childrenCore(s *Store) uintptr {
	return reflect.ValueOf(s.children).FieldByName("core").Elem().FieldByName("core").Pointer()
}

// fieldNames are struct type t's field names, in order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		out = append(out, t.Field(i).Name)
	}
	return out
}

// TestCopiesKeepEveryField: with every field of the store's configuration
// and of its two stores set, a receipt's copy (WithReceipt) and a
// decorated copy (Decorate, with no decorator) keep them all, and their
// features work on the copy's own core. The copies copy Config and stores
// whole, so a field added to either is kept; a field added to the core or
// to the store itself, outside them, fails here, since no copy would keep
// it.
func TestCopiesKeepEveryField(t *testing.T) {
	if got, want := fieldNames(reflect.TypeFor[core]()), []string{"Config", "stores", "receipt", "base", "lanes"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the core's fields are %v, want %v: put a new field in Config or stores, which the copies copy whole", got, want)
	}
	if got, want := fieldNames(reflect.TypeFor[Store]()), []string{"core", "ops", "children", "lifecycle"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the store's fields are %v, want %v: put a new field in Config or stores, which the copies copy whole", got, want)
	}
	s := New(nil, nil)
	setEvery(t, reflect.ValueOf(&s.Config).Elem())
	setEvery(t, reflect.ValueOf(&s.stores).Elem())
	rc := &Receipt{Key: "k"}
	withReceipt, decorated := s.WithReceipt(rc), s.Decorate(nil, nil)
	roots := map[*Store]*Store{withReceipt: s, decorated: decorated} // a decorated copy queues its own posts
	for name, c := range map[string]*Store{"WithReceipt": withReceipt, "Decorate": decorated} {
		if d := sameFields(reflect.ValueOf(&s.Config).Elem(), reflect.ValueOf(&c.Config).Elem()); len(d) > 0 {
			t.Errorf("%s dropped Config fields %v", name, d)
		}
		if d := sameFields(reflect.ValueOf(&s.stores).Elem(), reflect.ValueOf(&c.stores).Elem()); len(d) > 0 {
			t.Errorf("%s dropped the stores %v", name, d)
		}
		if c.core == s.core || c.ops.core != c.core || childrenCore(c) != reflect.ValueOf(c.core).Pointer() || c.lifecycle.core != c.core {
			t.Errorf("%s: the copy's features do not work on its own core", name)
		}
		if root := roots[c]; c.root() != root || c.lifecycle.kids != &root.children {
			t.Errorf("%s: the copy's root is not the store its writes without a receipt go to", name)
		}
	}
	if withReceipt.receipt != rc {
		t.Errorf("WithReceipt's copy writes receipt %v, want %v", withReceipt.receipt, rc)
	}
	if decorated.receipt != nil {
		t.Errorf("a decorated copy writes receipt %v, want none", decorated.receipt)
	}
}
