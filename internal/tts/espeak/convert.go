package espeak

// nativeRate is the rate of espeak-ng's own voices (its MBROLA voices speak at 16000 Hz;
// the WAV header says which).
const nativeRate = 22050
