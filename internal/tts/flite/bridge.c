//go:build embedded

/* See bridge.h. Thread safety is discussed in cgo.go. */

#include <string.h>
#include <flite/flite.h>

#include "bridge.h"
#include "_cgo_export.h"

cst_voice *register_cmu_us_kal(const char *voxdir);
cst_voice *register_cmu_us_kal16(const char *voxdir);
cst_voice *register_cmu_us_slt(const char *voxdir);
cst_voice *register_cmu_us_rms(const char *voxdir);
cst_voice *register_cmu_us_awb(const char *voxdir);

static struct {
    const char *name;
    cst_voice *voice;
} voices[5];

void handset_flite_register(void)
{
    flite_init();
    voices[0].name = "kal";
    voices[0].voice = register_cmu_us_kal(NULL);
    voices[1].name = "kal16";
    voices[1].voice = register_cmu_us_kal16(NULL);
    voices[2].name = "slt";
    voices[2].voice = register_cmu_us_slt(NULL);
    voices[3].name = "rms";
    voices[3].voice = register_cmu_us_rms(NULL);
    voices[4].name = "awb";
    voices[4].voice = register_cmu_us_awb(NULL);
}

void *handset_flite_voice(const char *name, int *rate)
{
    for (size_t i = 0; i < sizeof voices / sizeof voices[0]; i++) {
        if (voices[i].voice != NULL && strcmp(voices[i].name, name) == 0) {
            *rate = flite_get_param_int(voices[i].voice->features, "sample_rate", 0);
            return voices[i].voice;
        }
    }
    return NULL;
}

/* chunk is flite's audio_streaming_info callback: samples [start, start+size) of w are
 * new. userdata carries the Go handle (an integer, never a Go pointer). */
static int chunk(const cst_wave *w, int start, int size, int last,
                 cst_audio_streaming_info *asi)
{
    (void)last;
    if (size <= 0)
        return HANDSET_FLITE_CONT;
    return handsetFliteChunk((uintptr_t)asi->userdata, (short *)&w->samples[start], size);
}

int handset_flite_synth(void *voice, const char *text, uintptr_t handle)
{
    cst_utterance *u = new_utterance();
    cst_audio_streaming_info *asi = new_audio_streaming_info();
    asi->asc = chunk;
    asi->userdata = (void *)handle;
    /* On the utterance, not the shared voice: utt_init links the voice's features in
     * behind the utterance's own, so flite finds this one first. The utterance owns asi
     * from here on and frees it with itself. */
    feat_set(u->features, "streaming_info", audio_streaming_info_val(asi));
    utt_set_input_text(u, text);
    /* flite_do_synth deletes u itself when it fails. */
    u = flite_do_synth(u, (cst_voice *)voice, utt_synth);
    if (u == NULL)
        return -1;
    delete_utterance(u);
    return 0;
}
