package media

import "github.com/handset-voice/handset/internal/audio"

func struct16k() audio.Format { return audio.Format{Encoding: audio.PCM16, Rate: 16000} }
