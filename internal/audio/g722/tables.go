package g722

// The constant tables of ITU-T G.722. Names follow the standard's blocks: the QMF
// coefficients, the lower-band quantizer (q6 decision levels, 6-bit and 4-bit inverse
// quantizer outputs, log-scale factor multipliers) and the higher-band equivalents.

// qmf holds the 24 QMF filter coefficients h0..h23 (symmetric; they sum to 8192).
var qmf = [24]int32{
	3, -11, -11, 53, 12, -156, 32, 362, -210, -805, 951, 3876,
	3876, 951, -805, -210, 362, 32, -156, 12, 53, -11, -11, 3,
}

// q6 are the lower-band quantizer decision levels, relative to the step size (>>12).
var q6 = [32]int32{
	0, 35, 72, 110, 150, 190, 233, 276, 323, 370, 422, 473, 530, 587, 650, 714,
	786, 858, 940, 1023, 1121, 1219, 1339, 1458, 1612, 1765, 1980, 2195, 2557, 2919, 0, 0,
}

// lowNegative and lowPositive map a quantizer interval to its 6-bit code by the sign of
// the prediction error.
var (
	lowNegative = [32]int32{
		0, 63, 62, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19,
		18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 0,
	}
	lowPositive = [32]int32{
		0, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47,
		46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 0,
	}
)

// qm6 is the 6-bit inverse quantizer: what the decoder adds to its prediction.
var qm6 = [64]int32{
	-136, -136, -136, -136, -24808, -21904, -19008, -16704,
	-14984, -13512, -12280, -11192, -10232, -9360, -8576, -7856,
	-7192, -6576, -6000, -5456, -4944, -4464, -4008, -3576,
	-3168, -2776, -2400, -2032, -1688, -1360, -1040, -728,
	24808, 21904, 19008, 16704, 14984, 13512, 12280, 11192,
	10232, 9360, 8576, 7856, 7192, 6576, 6000, 5456,
	4944, 4464, 4008, 3576, 3168, 2776, 2400, 2032,
	1688, 1360, 1040, 728, 432, 136, -432, -136,
}

// qm4 is the 4-bit inverse quantizer (the code's top four bits): the predictor and the
// step size adapt from it alone, in encoder and decoder alike.
var qm4 = [16]int32{
	0, -20456, -12896, -8968, -6288, -4240, -2584, -1200,
	20456, 12896, 8968, 6288, 4240, 2584, 1200, 0,
}

// lowMagnitude (the standard's RIL to IL4 map) and lowLogFactor drive the lower band's
// log-scale factor.
var (
	lowMagnitude = [16]int32{0, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0}
	lowLogFactor = [8]int32{-60, -30, 58, 172, 334, 538, 1198, 3042}
)

// ilb is the antilog table: 2048·2^(i/32), used to turn a log scale factor into a step.
var ilb = [32]int32{
	2048, 2093, 2139, 2186, 2233, 2282, 2332, 2383,
	2435, 2489, 2543, 2599, 2656, 2714, 2774, 2834,
	2896, 2960, 3025, 3091, 3158, 3228, 3298, 3371,
	3444, 3520, 3597, 3676, 3756, 3838, 3922, 4008,
}

// The higher band: one decision level (564), sign-and-magnitude codes, inverse quantizer
// and log-scale factor.
var (
	highNegative  = [3]int32{0, 1, 0}
	highPositive  = [3]int32{0, 3, 2}
	qm2           = [4]int32{-7408, -1616, 7408, 1616}
	highMagnitude = [4]int32{2, 1, 2, 1}
	highLogFactor = [3]int32{0, -214, 798}
)
