//go:build embedded

package sphinx

/*
#cgo pkg-config: pocketsphinx sphinxbase
#include <stdlib.h>
#include <pocketsphinx.h>
#include <err.h>
#include <feat.h>
#include <cmn.h>

#if defined(FIXED_POINT)
#error "sphinxbase built with FIXED_POINT: mfcc_t is not float"
#endif

// handset_ps_quiet turns PocketSphinx's logging off for the whole process. It is not done
// with -logfn /dev/null: every ps_init given -logfn opens a new log FILE and fcloses the
// process-wide previous one, which a decoder on another thread may be writing to.
static void handset_ps_quiet(void) { err_set_logfp(NULL); }

// handset_ps_new loads one decoder in fast mode (no second forward pass, no lattice best
// path): final hypotheses in milliseconds at a small cost in accuracy. cmd_ln_init is
// variadic, so cgo cannot call it directly.
static ps_decoder_t *handset_ps_new(const char *hmm, const char *lm, const char *dict) {
	cmd_ln_t *cfg = cmd_ln_init(NULL, ps_args(), TRUE,
		"-hmm", hmm, "-lm", lm, "-dict", dict,
		"-fwdflat", "no", "-bestpath", "no",
		NULL);
	if (cfg == NULL) {
		return NULL;
	}
	ps_decoder_t *ps = ps_init(cfg);
	cmd_ln_free_r(cfg); // ps_init holds its own reference
	return ps;
}

// The decoder's live cepstral mean normalisation: cmn_mean is subtracted from every frame,
// sum and nframe accumulate the frames heard (the mean is recomputed from them at the end
// of each utterance and every few hundred frames). The state is saved and restored whole,
// as 2*veclen+1 floats: mean, sum, nframe. A model without normalisation (-cmn none) has
// no state: length 0.
static cmn_t *handset_ps_cmn(ps_decoder_t *ps) { return ps_get_feat(ps)->cmn_struct; }
static int handset_ps_cmn_len(ps_decoder_t *ps) {
	cmn_t *c = handset_ps_cmn(ps);
	return c == NULL ? 0 : 2 * c->veclen + 1;
}
static void handset_ps_cmn_get(ps_decoder_t *ps, float *v) {
	cmn_t *c = handset_ps_cmn(ps);
	for (int i = 0; i < c->veclen; i++) {
		v[i] = c->cmn_mean[i];
		v[c->veclen + i] = c->sum[i];
	}
	v[2 * c->veclen] = (float)c->nframe;
}
static void handset_ps_cmn_set(ps_decoder_t *ps, const float *v) {
	cmn_t *c = handset_ps_cmn(ps);
	for (int i = 0; i < c->veclen; i++) {
		c->cmn_mean[i] = v[i];
		c->sum[i] = v[c->veclen + i];
	}
	c->nframe = (int32)v[2 * c->veclen];
}

// handset_ps_end ends the utterance and brings the mean up to date with its frames.
// ps_end_utt does that only when frames are left to flush at the end (feat_cmn calls
// cmn_live_update only for a non-empty last block), which depends on where the audio's
// chunks fell; cmn_live_update is idempotent, so calling it again is safe.
static int handset_ps_end(ps_decoder_t *ps) {
	int rv = ps_end_utt(ps);
	cmn_t *c = handset_ps_cmn(ps);
	if (c != NULL && c->nframe > 0) {
		cmn_live_update(c);
	}
	return rv;
}

static const char *handset_ps_hyp(ps_decoder_t *ps) {
	int32 score;
	return ps_get_hyp(ps, &score);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"unsafe"
)

// linked is true: this build decodes with PocketSphinx through cgo.
const linked = true

var quietOnce sync.Once

// coldMeans are the cepstral means a stream's first utterance starts from before any
// utterance at its rate has been heard, for the en-us model's 13 cepstra. The live
// normalisation keeps one mean for a whole utterance (it updates at the end, or after 8 s),
// so the first utterance decodes against its starting mean, and the model's -cmninit is a
// poor one: measured on the pocketsphinx-testdata recordings decoded cold, 38% WER from
// -cmninit against 24% from the 16 kHz mean below, and on their telephone version 88%
// against 45% (8 kHz audio up-sampled has no energy above 4 kHz, which shifts every
// cepstrum). Both were measured as the mean over flite voices awb, kal16 and slt speaking
// eight caller lines, at 16 kHz and through 8 kHz mu-law, each utterance decoded from
// nothing accumulated (HANDSET_SPHINX_REMEASURE=1 go test -tags embedded -run TestColdMeans
// measures them again).
var coldMeans = map[int][]float32{
	16000: {52.50, 7.64, 3.96, 22.33, -3.25, -1.19, 3.68, -4.28, -0.24, -1.41, 3.91, 1.94, 1.57},
	8000:  {45.37, 34.12, -31.28, 49.04, -15.06, -5.48, 21.47, -26.82, 16.66, -6.07, -3.36, 15.88, -13.29},
}

// coldPriors are coldMeans as normalisation states (see handset_ps_cmn_get): the mean,
// with nothing accumulated, so the first utterance's own mean replaces it when it ends.
func coldPriors() map[int][]float32 {
	out := make(map[int][]float32, len(coldMeans))
	for rate, m := range coldMeans {
		out[rate] = meanState(m)
	}
	return out
}

func meanState(mean []float32) []float32 {
	st := make([]float32, 2*len(mean)+1)
	copy(st, mean)
	return st
}

// psDecoder is one ps_decoder_t with its own copy of the model.
type psDecoder struct {
	ps      *C.ps_decoder_t
	inUtt   bool
	initial []float32 // the normalisation state of a new decoder (feat.params -cmninit)
	cmn     []C.float // scratch for the state
}

// newDecoder loads the model in dir (which CheckModel has approved) into a new decoder.
func newDecoder(dir string) (decoder, error) {
	quietOnce.Do(func() { C.handset_ps_quiet() })
	hmm := C.CString(filepath.Join(dir, acousticDir))
	lm := C.CString(filepath.Join(dir, lmFile))
	dict := C.CString(filepath.Join(dir, dictFile))
	defer C.free(unsafe.Pointer(hmm))
	defer C.free(unsafe.Pointer(lm))
	defer C.free(unsafe.Pointer(dict))
	ps := C.handset_ps_new(hmm, lm, dict)
	if ps == nil {
		return nil, fmt.Errorf("sphinx: PocketSphinx could not load the model in %s (%s/, %s, %s): "+
			"a file is unreadable or not a PocketSphinx model; reinstall %s", dir, acousticDir, lmFile, dictFile, modelPackage)
	}
	d := &psDecoder{ps: ps, cmn: make([]C.float, C.handset_ps_cmn_len(ps))}
	d.initial = d.getCMN()
	return d, nil
}

func (d *psDecoder) getCMN() []float32 {
	if len(d.cmn) == 0 {
		return nil
	}
	C.handset_ps_cmn_get(d.ps, &d.cmn[0])
	out := make([]float32, len(d.cmn))
	for i, v := range d.cmn {
		out[i] = float32(v)
	}
	return out
}

func (d *psDecoder) start(cmn []float32) error {
	if len(cmn) != len(d.cmn) {
		cmn = d.initial // nil (a stream's first utterance) or another model's state
	}
	if len(cmn) > 0 {
		for i, v := range cmn {
			d.cmn[i] = C.float(v)
		}
		C.handset_ps_cmn_set(d.ps, &d.cmn[0])
	}
	if C.ps_start_utt(d.ps) < 0 {
		return errors.New("ps_start_utt failed")
	}
	d.inUtt = true
	return nil
}

func (d *psDecoder) process(pcm []int16) error {
	if len(pcm) == 0 {
		return nil
	}
	if C.ps_process_raw(d.ps, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), 0, 0) < 0 {
		return errors.New("ps_process_raw failed")
	}
	return nil
}

func (d *psDecoder) partial() string {
	if h := C.handset_ps_hyp(d.ps); h != nil {
		return C.GoString(h)
	}
	return ""
}

func (d *psDecoder) end() (string, []float32, error) {
	if !d.inUtt {
		return "", nil, nil
	}
	d.inUtt = false
	if C.handset_ps_end(d.ps) < 0 {
		return "", nil, errors.New("ps_end_utt failed")
	}
	return d.partial(), d.getCMN(), nil
}

func (d *psDecoder) close() {
	if d.ps != nil {
		C.ps_free(d.ps)
		d.ps = nil
	}
}
