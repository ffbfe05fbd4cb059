package webrtc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Exports of fvad.wasm by their minified names (see the package comment).
const (
	exportMemory     = "c"
	exportCtors      = "d"
	exportNew        = "e"
	exportMalloc     = "f"
	exportReset      = "g"
	exportFree       = "h"
	exportFreeMem    = "i"
	exportSetMode    = "j"
	exportSetRate    = "k"
	exportProcess    = "l"
	importModule     = "a"
	importAssert     = "a"
	importResizeHeap = "b"
)

const (
	pageSize = 65536
	// lowInitialPages is the initial linear memory the Engine declares instead of
	// Emscripten's 16 MiB; see the package comment.
	lowInitialPages = 2
	// memoryLimitPages caps each instance's linear memory (32 MiB, room for the declared
	// 16 MiB): libfvad needs well under 1 MiB, so a heap growing past this is a bug,
	// reported as a failed malloc.
	memoryLimitPages = 512
)

// funcSig is the signature an export or import must have: numbers of i32 params, results.
type funcSig struct{ params, results int }

var wantExports = map[string]funcSig{
	exportCtors:   {0, 0},
	exportNew:     {0, 1},
	exportMalloc:  {1, 1},
	exportReset:   {1, 0},
	exportFree:    {1, 0},
	exportFreeMem: {1, 0},
	exportSetMode: {2, 1},
	exportSetRate: {2, 1},
	exportProcess: {3, 1},
}

// Engine is fvad.wasm compiled for this process. It is safe for concurrent use: any number
// of goroutines may create detectors from one Engine.
type Engine struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	// initialPages is the linear memory each instance starts with (after lowering).
	initialPages uint32
	closed       atomic.Bool
}

// LoadEngine reads fvad.wasm from path and compiles it; see NewEngine.
func LoadEngine(ctx context.Context, path string) (*Engine, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webrtc: load fvad.wasm: %w", err)
	}
	return NewEngine(ctx, wasm)
}

// NewEngine compiles wasm, which must be libfvad built as described in the package
// comment, checks its imports and exports, and runs a self-test (one instance classifying
// a frame). Compiling takes tens of milliseconds; do it once per process and share the
// Engine. Close it when no detector is needed any more.
func NewEngine(ctx context.Context, wasm []byte) (*Engine, error) {
	return newEngineLowered(ctx, wasm, func(b []byte) ([]byte, error) { return withInitialPages(b, lowInitialPages) })
}

// newEngineLowered compiles lower(wasm), falling back to wasm as it is.
func newEngineLowered(ctx context.Context, wasm []byte, lower func([]byte) ([]byte, error)) (*Engine, error) {
	if low, err := lower(wasm); err == nil {
		e, err := newEngine(ctx, low)
		if err == nil {
			return e, nil
		}
	}
	// The lowered module did not work (or could not be rewritten): use the module as
	// declared, which costs memory but not correctness.
	return newEngine(ctx, wasm)
}

func newEngine(ctx context.Context, wasm []byte) (*Engine, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(memoryLimitPages))
	e := &Engine{rt: rt}
	if err := e.init(ctx, wasm); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Engine) init(ctx context.Context, wasm []byte) error {
	compiled, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("webrtc: compile fvad.wasm: %w", err)
	}
	if err := checkInterface(compiled); err != nil {
		return err
	}
	mem := compiled.ExportedMemories()[exportMemory]
	e.compiled, e.initialPages = compiled, mem.Min()
	_, err = e.rt.NewHostModuleBuilder(importModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(assertFail), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("assertion", "file", "line", "func").
		Export(importAssert).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(resizeHeap), []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("requested_size").
		Export(importResizeHeap).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("webrtc: host module: %w", err)
	}
	// Self-test: one detector classifies 20 ms of silence.
	d, err := e.NewDetector(Config{Rate: 8000})
	if err != nil {
		return err
	}
	defer d.Close()
	d.Process(make([]int16, 160))
	if d.Err() != nil {
		return fmt.Errorf("webrtc: self-test: %w", d.Err())
	}
	return nil
}

// checkInterface verifies the module's imports and exports against the table in the
// package comment, so a different build fails here and not on the first frame.
func checkInterface(m wazero.CompiledModule) error {
	if _, ok := m.ExportedMemories()[exportMemory]; !ok {
		return fmt.Errorf("webrtc: fvad.wasm exports no memory %q: not the expected libfvad build", exportMemory)
	}
	fns := m.ExportedFunctions()
	for name, sig := range wantExports {
		f, ok := fns[name]
		if !ok {
			return fmt.Errorf("webrtc: fvad.wasm has no export %q: not the expected libfvad build", name)
		}
		if !allI32(f.ParamTypes(), sig.params) || !allI32(f.ResultTypes(), sig.results) {
			return fmt.Errorf("webrtc: fvad.wasm export %q has signature %v -> %v, want %d i32 -> %d i32",
				name, f.ParamTypes(), f.ResultTypes(), sig.params, sig.results)
		}
	}
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != importModule || (name != importAssert && name != importResizeHeap) {
			return fmt.Errorf("webrtc: fvad.wasm imports %s.%s, which this package does not provide", mod, name)
		}
	}
	return nil
}

func allI32(types []api.ValueType, n int) bool {
	if len(types) != n {
		return false
	}
	for _, t := range types {
		if t != api.ValueTypeI32 {
			return false
		}
	}
	return true
}

// Close releases the compiled module and every detector still open on it; detectors used
// after Close report ErrClosed (see Detector.Err). Call it once the goroutines driving
// its detectors have stopped. Close is idempotent.
func (e *Engine) Close(ctx context.Context) error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.rt.Close(ctx)
}

// moduleConfig instantiates anonymously, so the compiled module can be instantiated any
// number of times, and runs the C constructors as the start function.
func (e *Engine) moduleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().WithName("").WithStartFunctions(exportCtors)
}

// InitialMemory is the linear memory, in bytes, each detector's instance starts with.
func (e *Engine) InitialMemory() int { return int(e.initialPages) * pageSize }

// errAssert is the panic value of a failed assertion inside libfvad; wazero returns it, wrapped,
// from the call that hit it.
var errAssert = errors.New("webrtc: libfvad assertion failed")

// assertFail implements __assert_fail(assertion, file, line, function): libfvad hit a
// failed assert(). The panic unwinds the wasm call, which returns it as an error.
func assertFail(_ context.Context, m api.Module, stack []uint64) {
	mem := m.Memory()
	panic(fmt.Errorf("%w: %s at %s:%d in %s", errAssert,
		cString(mem, api.DecodeU32(stack[0])), cString(mem, api.DecodeU32(stack[1])),
		api.DecodeI32(stack[2]), cString(mem, api.DecodeU32(stack[3]))))
}

// resizeHeap implements emscripten_resize_heap(requested): grow the caller's linear memory
// to at least requested bytes; 1 on success, 0 when the memory cannot grow (malloc then
// returns NULL).
func resizeHeap(_ context.Context, m api.Module, stack []uint64) {
	mem := m.Memory()
	requested := uint64(api.DecodeU32(stack[0]))
	ok := uint64(1)
	if have := uint64(mem.Size()); requested > have {
		pages := (requested - have + pageSize - 1) / pageSize
		if _, grown := mem.Grow(uint32(pages)); !grown {
			ok = 0
		}
	}
	stack[0] = ok
}

// cString reads the NUL-terminated string at ptr (at most 256 bytes), for error messages.
func cString(mem api.Memory, ptr uint32) string {
	var b []byte
	for i := uint32(0); i < 256; i++ {
		c, ok := mem.ReadByte(ptr + i)
		if !ok || c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// withInitialPages returns a copy of the wasm binary whose memory declares a smaller
// initial size: pages, or the pages its static layout needs (the end of its data segments
// and the initial values of its i32 globals, among them Emscripten's stack pointer), if
// more. It returns an error, and the caller keeps the binary as it is, when the declared
// size is already that small, or when the binary is malformed, holds anything but one
// memory of its own, or places data where a constant cannot tell.
func withInitialPages(wasm []byte, pages uint32) ([]byte, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm binary")
	}
	type section struct {
		id               byte
		start, body, end int
	}
	var secs []section
	for i := 8; i < len(wasm); {
		size, n := uleb(wasm[i+1:])
		if n == 0 || size > uint64(len(wasm)-i-1-n) {
			return nil, errors.New("bad section size")
		}
		body := i + 1 + n
		secs = append(secs, section{wasm[i], i, body, body + int(size)})
		i = body + int(size)
	}
	var need uint64
	mem := -1
	for k, s := range secs {
		var end uint64
		var err error
		switch s.id {
		case 5:
			mem = k
		case 6:
			end, err = globalsEnd(wasm[s.body:s.end])
		case 11:
			end, err = dataEnd(wasm[s.body:s.end])
		}
		if err != nil {
			return nil, err
		}
		need = max(need, end)
	}
	if mem < 0 {
		return nil, errors.New("no memory section")
	}
	pages = max(pages, uint32((need+pageSize-1)/pageSize))
	s := secs[mem]
	body, err := lowerMemorySection(wasm[s.body:s.end], pages)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(wasm))
	out = append(out, wasm[:s.start]...)
	out = append(out, s.id)
	out = appendUleb(out, uint64(len(body)))
	out = append(out, body...)
	return append(out, wasm[s.end:]...), nil
}

// lowerMemorySection rewrites a memory section holding one memory (limits flag 0 or 1)
// to declare pages initial pages; it fails when the memory already declares no more.
func lowerMemorySection(sec []byte, pages uint32) ([]byte, error) {
	count, n := uleb(sec)
	if n == 0 || count != 1 || len(sec) < n+1 {
		return nil, errors.New("memory section does not hold exactly one memory")
	}
	flag := sec[n]
	if flag > 1 {
		return nil, fmt.Errorf("memory limits flag %#x not supported", flag)
	}
	minPages, m := uleb(sec[n+1:])
	if m == 0 {
		return nil, errors.New("bad memory minimum")
	}
	if minPages <= uint64(pages) {
		return nil, fmt.Errorf("memory declares %d pages already", minPages)
	}
	out := appendUleb([]byte{1, flag}, uint64(pages))
	return append(out, sec[n+1+m:]...), nil
}

// globalsEnd is the largest initial value of the i32 globals in a global section: an
// address when the global is a stack or heap pointer.
func globalsEnd(sec []byte) (uint64, error) {
	count, i := uleb(sec)
	var end uint64
	for range count {
		if i+2 > len(sec) {
			return 0, errors.New("global section truncated")
		}
		i += 2 // value type, mutability
		v, n, err := constExpr(sec[i:])
		if err != nil {
			return 0, err
		}
		end = max(end, v)
		i += n
	}
	return end, nil
}

// dataEnd is the end address of the furthest active data segment in a data section.
func dataEnd(sec []byte) (uint64, error) {
	count, i := uleb(sec)
	var end uint64
	for range count {
		flag, n := uleb(sec[i:])
		if n == 0 {
			return 0, errors.New("data section truncated")
		}
		i += n
		var offset uint64
		switch flag {
		case 2:
			_, n = uleb(sec[i:]) // memory index
			i += n
			fallthrough
		case 0:
			v, n, err := constExpr(sec[i:])
			if err != nil {
				return 0, err
			}
			offset, i = v, i+n
		case 1: // passive: memory.init copies it where the code says, inside the layout
		default:
			return 0, fmt.Errorf("data segment flag %d", flag)
		}
		size, n := uleb(sec[i:])
		if n == 0 || size > uint64(len(sec)-i-n) {
			return 0, errors.New("data segment truncated")
		}
		i += n + int(size)
		if flag != 1 {
			end = max(end, offset+size)
		}
	}
	return end, nil
}

// constExpr reads a constant initialiser expression and returns its value when it is an
// i32.const (read as unsigned, an address), 0 for other constants, and its length. An
// expression that is not a single constant (global.get, an extended constant) is an
// error: its value cannot be known here.
func constExpr(b []byte) (v uint64, n int, err error) {
	if len(b) < 2 {
		return 0, 0, errors.New("constant expression truncated")
	}
	switch b[0] {
	case 0x41: // i32.const
		x, k := sleb32(b[1:])
		v, n = uint64(uint32(x)), 1+k
	case 0x42: // i64.const: skip
		n = 1
		for n < len(b) && b[n]&0x80 != 0 {
			n++
		}
		n++
	case 0x43: // f32.const
		n = 5
	case 0x44: // f64.const
		n = 9
	default:
		return 0, 0, fmt.Errorf("initialiser opcode %#x is not a constant", b[0])
	}
	if n >= len(b) || b[n] != 0x0b {
		return 0, 0, errors.New("constant expression does not end")
	}
	return v, n + 1, nil
}

// sleb32 decodes a signed LEB128 number of at most 5 bytes.
func sleb32(b []byte) (int32, int) {
	var v int64
	for i := 0; i < len(b) && i < 5; i++ {
		v |= int64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			return int32(v), i + 1
		}
	}
	return 0, len(b)
}

// uleb decodes an unsigned LEB128 number (at most 5 bytes, as wasm u32s are) and returns
// it with the bytes it took; n is 0 when b does not start with one.
func uleb(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

func appendUleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
