//! oxnet's own JPEG decoder for baseline (the common case: one interleaved
//! Huffman scan) and progressive Huffman JPEG, 8-bit, gray or YCbCr with
//! 4:4:4, 4:2:2 or 4:2:0 chroma.
//!
//! Why not only zune-jpeg: an image pipeline needs a window of each image
//! (a 224 crop of a 256-short-side resize uses about 60% of a photo), and
//! entropy decoding is the only step that must touch the whole scan. This
//! decoder Huffman-decodes MCU rows down to the last one the window needs
//! and runs the IDCT, upsampling and colour conversion only on the MCUs
//! around the window. Its arithmetic is libjpeg's defaults, which OpenCV
//! (and so MXNet) decodes with: the "islow" integer IDCT, "fancy"
//! (triangle) chroma upsampling and the ITU-R 601 YCbCr -> RGB tables, so
//! pixels match libjpeg(-turbo)'s.
//!
//! Progressive JPEGs (same layouts) are decoded scan by scan into a
//! coefficient buffer and then transformed the same way, window included.
//!
//! Anything else (arithmetic, 12-bit, CMYK/Adobe RGB, other sampling
//! layouts, quantisation tables redefined between progressive scans) and
//! any stream this decoder cannot read is left to zune-jpeg:
//! [`Frame::parse`] returns `None` and [`Frame::decode`] a [`Bad`] reason,
//! and the caller falls back.

/// Why this decoder gave up on a stream (the caller falls back to zune-jpeg).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bad(pub &'static str);

type R<T> = std::result::Result<T, Bad>;

use crate::io::image::Rect;
use std::num::Wrapping;

/// Zigzag position -> natural (row-major) index in an 8x8 block.
const ZIGZAG: [u8; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

const FAST_BITS: u32 = 9;

/// A Huffman table: a 9-bit lookahead for short codes, libjpeg's
/// maxcode/valoffset arrays for the rest, and (for AC tables) a lookahead
/// that decodes a whole small coefficient (code and value bits) at once.
struct Huff {
    /// `len << 8 | symbol` for codes of at most FAST_BITS bits, 0 otherwise.
    fast: [u16; 1 << FAST_BITS],
    /// `value << 16 | run << 8 | bits used` for AC codes whose value bits
    /// also fit in FAST_BITS, 0 otherwise.
    ac_fast: [i32; 1 << FAST_BITS],
    maxcode: [i32; 18],
    valoff: [i32; 17],
    vals: [u8; 256],
    nvals: usize,
}

fn extend(v: u32, s: u32) -> i32 {
    if s == 0 {
        0
    } else if v < (1 << (s - 1)) {
        v as i32 - (1 << s) + 1
    } else {
        v as i32
    }
}

impl Huff {
    fn new(counts: &[u8; 16], symbols: &[u8]) -> R<Box<Huff>> {
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        if n > 256 || n != symbols.len() {
            return Err(Bad("bad Huffman table size"));
        }
        let mut h = Box::new(Huff {
            fast: [0; 1 << FAST_BITS],
            ac_fast: [0; 1 << FAST_BITS],
            maxcode: [-1; 18],
            valoff: [0; 17],
            vals: [0; 256],
            nvals: n,
        });
        h.vals[..n].copy_from_slice(symbols);
        let (mut code, mut k) = (0u32, 0usize);
        for l in 1..=16usize {
            let cnt = counts[l - 1] as usize;
            h.valoff[l] = k as i32 - code as i32;
            for _ in 0..cnt {
                // checked before the code is used: an over-subscribed table
                // would index past the lookahead table
                if code >= (1 << l) {
                    return Err(Bad("over-subscribed Huffman table"));
                }
                if l as u32 <= FAST_BITS {
                    let shift = FAST_BITS - l as u32;
                    let base = (code << shift) as usize;
                    for j in 0..(1usize << shift) {
                        h.fast[base + j] = ((l as u16) << 8) | symbols[k] as u16;
                    }
                }
                code += 1;
                k += 1;
            }
            if cnt > 0 {
                h.maxcode[l] = code as i32 - 1;
            }
            code <<= 1;
        }
        h.maxcode[17] = i32::MAX;
        for idx in 0..(1usize << FAST_BITS) {
            let e = h.fast[idx];
            if e == 0 {
                continue;
            }
            let (len, rs) = ((e >> 8) as u32, (e & 0xFF) as u32);
            let (run, s) = (rs >> 4, rs & 15);
            if s != 0 && len + s <= FAST_BITS {
                let extra = (idx as u32 >> (FAST_BITS - len - s)) & ((1 << s) - 1);
                let v = extend(extra, s);
                h.ac_fast[idx] = (v << 16) | ((run as i32) << 8) | (len + s) as i32;
            }
        }
        Ok(h)
    }
}

/// MSB-first bit reader over entropy-coded bytes: undoes 0xFF00 stuffing,
/// stops at a marker and reads zeros past it (as libjpeg does). The cold
/// paths take and return it by value, so that in the decoding loop it
/// lives in registers (a `&mut` passed to an outlined call would pin it to
/// memory and put a store/load on every symbol's dependency chain).
#[derive(Clone, Copy)]
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    bits: u64,
    nbits: u32,
    /// Zero bytes fed since the data ran out (or met a marker).
    pad: u32,
    /// Padding bits consumed in earlier restart intervals.
    overrun: u64,
}

/// The error of a scan whose data ran out long before its blocks were
/// decoded (a truncated file, or a bomb's patched header): a hard error,
/// not a reason to try another decoder.
pub const DATA_ENDS: &str = "the entropy-coded data ends long before the frame is covered";

/// Padding bits a scan may consume before its data counts as ended (an
/// encoder that drops the last partial byte costs a few).
const OVERRUN_SLACK: u64 = 1024;

impl<'a> Bits<'a> {
    #[inline(always)]
    fn fill(&mut self) {
        if self.nbits >= 32 {
            return;
        }
        if let Some(w) = self.data.get(self.pos..self.pos + 8) {
            let word = u64::from_be_bytes(w.try_into().unwrap());
            // no 0xFF byte among the eight: take as many whole bytes as fit
            let inv = !word;
            if inv.wrapping_sub(0x0101_0101_0101_0101) & word & 0x8080_8080_8080_8080 == 0 {
                let n = (64 - self.nbits) / 8;
                let keep = word & !((1u64 << (64 - 8 * n)) - 1);
                self.bits |= keep >> self.nbits;
                self.nbits += 8 * n;
                self.pos += n as usize;
                return;
            }
        }
        *self = self.fill_slow();
    }

    #[cold]
    #[inline(never)]
    fn fill_slow(mut self) -> Self {
        while self.nbits <= 56 {
            let mut b = 0u8;
            if let Some(&x) = self.data.get(self.pos) {
                if x != 0xFF {
                    b = x;
                    self.pos += 1;
                } else if self.data.get(self.pos + 1) == Some(&0) {
                    b = 0xFF;
                    self.pos += 2;
                } else {
                    // a marker: stay on it and read zeros
                    self.pad += 1;
                }
            } else {
                self.pad += 1;
            }
            self.bits |= (b as u64) << (56 - self.nbits);
            self.nbits += 8;
        }
        self
    }

    #[inline(always)]
    fn peek(&self, n: u32) -> u32 {
        (self.bits >> (64 - n)) as u32
    }

    #[inline(always)]
    fn skip(&mut self, n: u32) {
        self.bits <<= n;
        self.nbits -= n;
    }

    /// Padding bits consumed so far: bits decoded past the end of the data.
    fn overrun_bits(&self) -> u64 {
        self.overrun + (self.pad as u64 * 8).saturating_sub(self.nbits as u64)
    }

    /// An error when the scan consumed more padding than a sane encoder's
    /// last byte explains.
    fn check_overrun(&self) -> R<()> {
        if self.overrun_bits() > OVERRUN_SLACK {
            return Err(Bad(DATA_ENDS));
        }
        Ok(())
    }

    #[inline(always)]
    fn get(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        let v = self.peek(n);
        self.skip(n);
        v
    }

    /// One Huffman symbol (at least 32 bits must be buffered).
    #[inline(always)]
    fn symbol(&mut self, h: &Huff) -> R<u8> {
        let e = h.fast[self.peek(FAST_BITS) as usize];
        if e != 0 {
            self.skip((e >> 8) as u32);
            return Ok(e as u8);
        }
        let (sym, len) = symbol_slow(self.bits, h)?;
        self.skip(len);
        Ok(sym)
    }

    /// Skip to the restart marker after an interval and past it.
    #[inline(never)]
    fn restart(mut self) -> R<Self> {
        self.overrun = self.overrun_bits();
        self.pad = 0;
        self.bits = 0;
        self.nbits = 0;
        let d = self.data;
        let mut p = self.pos;
        while p < d.len() && d[p] != 0xFF {
            p += 1; // padding a lenient encoder left
        }
        while p + 1 < d.len() && d[p + 1] == 0xFF {
            p += 1;
        }
        if p + 1 < d.len() && (0xD0..=0xD7).contains(&d[p + 1]) {
            self.pos = p + 2;
            Ok(self)
        } else {
            Err(Bad("missing restart marker"))
        }
    }
}

/// A code longer than FAST_BITS at the top of `bits`: (symbol, length).
#[cold]
#[inline(never)]
fn symbol_slow(bits: u64, h: &Huff) -> R<(u8, u32)> {
    for l in (FAST_BITS + 1)..=16 {
        let code = (bits >> (64 - l)) as i32;
        if code <= h.maxcode[l as usize] {
            let i = code + h.valoff[l as usize];
            if i < 0 || i as usize >= h.nvals {
                return Err(Bad("invalid Huffman code"));
            }
            return Ok((h.vals[i as usize], l));
        }
    }
    Err(Bad("invalid Huffman code"))
}

/// Decode one block's coefficients (zigzag -> natural order, not yet
/// dequantised) into `blk`, which must be all zero. Returns the last
/// zigzag position written (0: only the DC coefficient).
#[inline(always)]
fn decode_block(
    br: &mut Bits<'_>,
    dc: &Huff,
    ac: &Huff,
    pred: &mut i32,
    blk: &mut [i16; 64],
) -> R<usize> {
    br.fill();
    let s = br.symbol(dc)? as u32;
    if s > 16 {
        return Err(Bad("bad DC magnitude"));
    }
    let diff = extend(br.get(s), s);
    *pred = pred.wrapping_add(diff);
    blk[0] = *pred as i16;
    let mut k = 1usize;
    let mut last = 0usize;
    while k < 64 {
        br.fill();
        let e = ac.ac_fast[br.peek(FAST_BITS) as usize];
        if e != 0 {
            br.skip((e & 0xFF) as u32);
            k += ((e >> 8) & 0xFF) as usize;
            if k > 63 {
                return Err(Bad("AC coefficient index past 63"));
            }
            blk[ZIGZAG[k] as usize] = (e >> 16) as i16;
            last = k;
            k += 1;
            continue;
        }
        let rs = br.symbol(ac)? as u32;
        let (r, s) = (rs >> 4, rs & 15);
        if s == 0 {
            if r != 15 {
                break; // end of block
            }
            k += 16;
            continue;
        }
        k += r as usize;
        if k > 63 {
            return Err(Bad("AC coefficient index past 63"));
        }
        blk[ZIGZAG[k] as usize] = extend(br.get(s), s) as i16;
        last = k;
        k += 1;
    }
    Ok(last)
}

/// The first AC scan of a band [ss, se] for one block, successive
/// approximation bit `al` (an end-of-band run covers the next blocks).
#[inline(always)]
fn ac_first(
    br: &mut Bits<'_>,
    ac: &Huff,
    blk: &mut Coefs,
    ss: usize,
    se: usize,
    al: u32,
    eobrun: &mut u32,
) -> R<()> {
    if *eobrun > 0 {
        *eobrun -= 1;
        return Ok(());
    }
    let mut k = ss;
    while k <= se {
        br.fill();
        let rs = br.symbol(ac)? as u32;
        let (r, s) = (rs >> 4, rs & 15);
        if s == 0 {
            if r < 15 {
                *eobrun = (1 << r) + br.get(r) - 1;
                break;
            }
            k += 16;
            continue;
        }
        k += r as usize;
        if k > se {
            return Err(Bad("AC coefficient index past the band"));
        }
        blk.c[ZIGZAG[k] as usize] = (extend(br.get(s), s) << al) as i16;
        blk.nz |= 1 << k;
        k += 1;
    }
    Ok(())
}

/// Add the next bit of a coefficient that is already nonzero (away from
/// zero when the bit is set and not there yet).
#[inline(always)]
fn refine_bit(br: &mut Bits<'_>, v: &mut i16, p1: i16) {
    br.fill();
    if br.get(1) != 0 && *v & p1 == 0 {
        *v = v.wrapping_add(if *v >= 0 { p1 } else { p1.wrapping_neg() });
    }
}

/// Zigzag positions lo..=hi as bits (none when lo > hi; hi <= 63).
#[inline(always)]
fn band(lo: usize, hi: usize) -> u64 {
    if lo > hi {
        0
    } else {
        (u64::MAX >> (63 - hi)) & (u64::MAX << lo)
    }
}

/// [`refine_bit`] for each nonzero coefficient among the zigzag
/// positions in `mask`, in order.
#[inline(always)]
fn refine_bits(br: &mut Bits<'_>, blk: &mut Coefs, mask: u64, p1: i16) {
    let mut m = blk.nz & mask;
    while m != 0 {
        refine_bit(
            br,
            &mut blk.c[ZIGZAG[m.trailing_zeros() as usize] as usize],
            p1,
        );
        m &= m - 1;
    }
}

/// A refinement AC scan of a band [ss, se] for one block: one more bit
/// (`al`) for the coefficients already nonzero, and newly nonzero ones of
/// magnitude 1 << al.
#[inline(always)]
fn ac_refine(
    br: &mut Bits<'_>,
    ac: &Huff,
    blk: &mut Coefs,
    ss: usize,
    se: usize,
    al: u32,
    eobrun: &mut u32,
) -> R<()> {
    let p1 = (1i32 << al) as i16;
    let mut k = ss;
    if *eobrun == 0 {
        while k <= se {
            br.fill();
            let rs = br.symbol(ac)? as u32;
            let (r, s) = (rs >> 4, rs & 15);
            let mut val = 0i16;
            if s != 0 {
                if s != 1 {
                    return Err(Bad("refinement coefficient of magnitude above 1"));
                }
                val = if br.get(1) != 0 {
                    p1
                } else {
                    p1.wrapping_neg()
                };
            } else if r != 15 {
                *eobrun = (1 << r) + br.get(r);
                break;
            }
            // pass r zero coefficients, refining the nonzero ones among
            // them; the new value goes on the zero after them (t)
            let mut zeros = !blk.nz & band(k, se);
            for _ in 0..r {
                zeros &= zeros.wrapping_sub(1);
            }
            let t = if zeros == 0 {
                se + 1
            } else {
                zeros.trailing_zeros() as usize
            };
            refine_bits(br, blk, band(k, t.saturating_sub(1)), p1);
            k = t;
            if val != 0 && k <= se {
                blk.c[ZIGZAG[k] as usize] = val;
                blk.nz |= 1 << k;
            }
            k += 1;
        }
    }
    if *eobrun > 0 {
        // inside an end-of-band run: only the refinement bits of the
        // nonzero coefficients from k to se
        refine_bits(br, blk, band(k, se), p1);
        *eobrun -= 1;
    }
    Ok(())
}

// ---------------------------------------------------------------- IDCT

const CONST_BITS: usize = 13;
const PASS1_BITS: usize = 2;
const F0_298: i32 = 2446;
const F0_390: i32 = 3196;
const F0_541: i32 = 4433;
const F0_765: i32 = 6270;
const F0_899: i32 = 7373;
const F1_175: i32 = 9633;
const F1_501: i32 = 12299;
const F1_847: i32 = 15137;
const F1_961: i32 = 16069;
const F2_053: i32 = 16819;
const F2_562: i32 = 20995;
const F3_072: i32 = 25172;

/// One 1-D pass of libjpeg's islow IDCT on eight vectors at once: `v[k]`
/// holds input k of eight independent 1-D transforms (one per lane);
/// outputs are descaled by `shift` with rounding and offset by `add`.
/// With `SPARSE`, inputs 4..8 are taken as zero (the zero terms dropped:
/// the same integers for blocks whose nonzero coefficients all lie in the
/// top-left 4x4).
#[inline(always)]
fn idct_pass<const SPARSE: bool>(v: &[[i32; 8]; 8], shift: usize, add: i32) -> [[i32; 8]; 8] {
    // wrapping arithmetic: corrupt coefficients may overflow (garbage
    // pixels, never a panic in a debug build); valid ones never do
    let mut o = [[0i32; 8]; 8];
    let w = Wrapping;
    let (round, add) = (w(1i32 << (shift - 1)), w(add));
    for j in 0..8 {
        let x = |k: usize| if SPARSE && k >= 4 { w(0) } else { w(v[k][j]) };
        let (z2, z3) = (x(2), x(6));
        let z1 = (z2 + z3) * w(F0_541);
        let tmp2 = z1 + z3 * w(-F1_847);
        let tmp3 = z1 + z2 * w(F0_765);
        let tmp0 = (x(0) + x(4)) << CONST_BITS;
        let tmp1 = (x(0) - x(4)) << CONST_BITS;
        let (t10, t13, t11, t12) = (tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2);

        let (a0, a1, a2, a3) = (x(7), x(5), x(3), x(1));
        let z5 = (a0 + a1 + a2 + a3) * w(F1_175);
        let z1 = (a0 + a3) * w(-F0_899);
        let z2 = (a1 + a2) * w(-F2_562);
        let z3 = (a0 + a2) * w(-F1_961) + z5;
        let z4 = (a1 + a3) * w(-F0_390) + z5;
        let a0 = a0 * w(F0_298) + z1 + z3;
        let a1 = a1 * w(F2_053) + z2 + z4;
        let a2 = a2 * w(F3_072) + z2 + z3;
        let a3 = a3 * w(F1_501) + z1 + z4;

        let out = |t: Wrapping<i32>| (((t + round) >> shift) + add).0;
        o[0][j] = out(t10 + a3);
        o[7][j] = out(t10 - a3);
        o[1][j] = out(t11 + a2);
        o[6][j] = out(t11 - a2);
        o[2][j] = out(t12 + a1);
        o[5][j] = out(t12 - a1);
        o[3][j] = out(t13 + a0);
        o[4][j] = out(t13 - a0);
    }
    o
}

#[inline(always)]
fn transpose(m: &[[i32; 8]; 8]) -> [[i32; 8]; 8] {
    let mut t = [[0i32; 8]; 8];
    for (i, row) in m.iter().enumerate() {
        for (j, &x) in row.iter().enumerate() {
            t[j][i] = x;
        }
    }
    t
}

#[inline(always)]
fn dequantise<const SPARSE: bool>(blk: &[i16; 64], q: &[i32; 64]) -> [[i32; 8]; 8] {
    let mut v = [[0i32; 8]; 8];
    let n = if SPARSE { 4 } else { 8 };
    for r in 0..n {
        for c in 0..n {
            v[r][c] = (blk[r * 8 + c] as i32).wrapping_mul(q[r * 8 + c]);
        }
    }
    v
}

/// The 8x8 pixels of a block dequantised by `q`, libjpeg islow
/// (range-limited to 0..=255), in portable code. `SPARSE`: only the
/// top-left 4x4 coefficients may be nonzero (zigzag positions 0..=9).
fn idct_portable<const SPARSE: bool>(
    blk: &[i16; 64],
    q: &[i32; 64],
    out: &mut [u8],
    stride: usize,
) {
    let v = dequantise::<SPARSE>(blk, q);
    // pass 1 on columns (lanes = columns), pass 2 on rows
    let ws = idct_pass::<SPARSE>(&v, CONST_BITS - PASS1_BITS, 0);
    let px = idct_pass::<SPARSE>(&transpose(&ws), CONST_BITS + PASS1_BITS + 3, 128);
    let px = transpose(&px);
    for (r, row) in px.iter().enumerate() {
        for (c, &x) in row.iter().enumerate() {
            out[r * stride + c] = x.clamp(0, 255) as u8;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn transpose8(m: &mut [[i32; 8]; 8]) {
        let r: [__m256i; 8] =
            std::array::from_fn(|i| _mm256_loadu_si256(m[i].as_ptr() as *const __m256i));
        let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
        let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
        let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        let u0 = _mm256_unpacklo_epi64(t0, t2);
        let u1 = _mm256_unpackhi_epi64(t0, t2);
        let u2 = _mm256_unpacklo_epi64(t1, t3);
        let u3 = _mm256_unpackhi_epi64(t1, t3);
        let u4 = _mm256_unpacklo_epi64(t4, t6);
        let u5 = _mm256_unpackhi_epi64(t4, t6);
        let u6 = _mm256_unpacklo_epi64(t5, t7);
        let u7 = _mm256_unpackhi_epi64(t5, t7);
        let o = [
            _mm256_permute2x128_si256(u0, u4, 0x20),
            _mm256_permute2x128_si256(u1, u5, 0x20),
            _mm256_permute2x128_si256(u2, u6, 0x20),
            _mm256_permute2x128_si256(u3, u7, 0x20),
            _mm256_permute2x128_si256(u0, u4, 0x31),
            _mm256_permute2x128_si256(u1, u5, 0x31),
            _mm256_permute2x128_si256(u2, u6, 0x31),
            _mm256_permute2x128_si256(u3, u7, 0x31),
        ];
        for (i, v) in o.iter().enumerate() {
            _mm256_storeu_si256(m[i].as_mut_ptr() as *mut __m256i, *v);
        }
    }

    /// [`idct_portable`] with the passes compiled for AVX2 (eight lanes of
    /// i32: the same integer arithmetic, so the same pixels).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn idct<const SPARSE: bool>(
        blk: &[i16; 64],
        q: &[i32; 64],
        out: &mut [u8],
        stride: usize,
    ) {
        assert!(out.len() >= 7 * stride + 8);
        let v = dequantise::<SPARSE>(blk, q);
        let mut ws = idct_pass::<SPARSE>(&v, CONST_BITS - PASS1_BITS, 0);
        transpose8(&mut ws);
        let mut px = idct_pass::<SPARSE>(&ws, CONST_BITS + PASS1_BITS + 3, 128);
        transpose8(&mut px);
        let ld = |i: usize| _mm256_loadu_si256(px[i].as_ptr() as *const __m256i);
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for h in 0..2 {
            let p01 = _mm256_packs_epi32(ld(4 * h), ld(4 * h + 1));
            let p23 = _mm256_packs_epi32(ld(4 * h + 2), ld(4 * h + 3));
            let b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order);
            let mut rows = [0u64; 4];
            _mm256_storeu_si256(rows.as_mut_ptr() as *mut __m256i, b);
            for (i, r) in rows.iter().enumerate() {
                let at = (4 * h + i) * stride;
                out[at..at + 8].copy_from_slice(&r.to_le_bytes());
            }
        }
    }

    /// [`ycc_rgb_portable`] sixteen pixels at a time (the same integer
    /// results: each 17-bit constant is split into a multiple of 65536,
    /// added exactly, and a 16-bit rest for `madd`). Returns the pixels done.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn ycc_rgb(y: &[u8], cb: &[u8], cr: &[u8], dst: &mut [u8]) -> usize {
        let n = y.len();
        assert!(cb.len() >= n && cr.len() >= n && dst.len() >= 3 * n);
        let c128 = _mm256_set1_epi16(128);
        let two = _mm256_set1_epi16(2);
        let half = _mm256_set1_epi32(1 << 15);
        let k_r = _mm256_set1_epi32((16384 << 16) | 26345); // (cr, 2) . (26345, 16384)
        let k_b = _mm256_set1_epi32((16384 << 16) | (-14942i32 & 0xFFFF)); // (cb, 2) . (-14942, 16384)
        let k_g = _mm256_set1_epi32((18734 << 16) | (-22554i32 & 0xFFFF)); // (cb, cr) . (-22554, 18734)
        let madd_shift = |a: __m256i, b: __m256i, k: __m256i, add: __m256i| {
            let lo = _mm256_srai_epi32::<16>(_mm256_add_epi32(
                _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), k),
                add,
            ));
            let hi = _mm256_srai_epi32::<16>(_mm256_add_epi32(
                _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), k),
                add,
            ));
            _mm256_packs_epi32(lo, hi)
        };
        let zero = _mm256_setzero_si256();
        // per 128-bit lane: rg = r0..7 g0..7, b = b0..7; output 24 bytes
        let mut m = [[0x80u8; 16]; 4];
        for j in 0..24 {
            let (p, ch) = (j / 3, j % 3);
            let (which, at) = if j < 16 { (0, j) } else { (2, j - 16) };
            if ch == 2 {
                m[which + 1][at] = p as u8;
            } else {
                m[which][at] = (p + 8 * ch) as u8;
            }
        }
        let mk = |i: usize| {
            let v = _mm_loadu_si128(m[i].as_ptr() as *const __m128i);
            _mm256_set_m128i(v, v)
        };
        let (m_rg_a, m_b_a, m_rg_b, m_b_b) = (mk(0), mk(1), mk(2), mk(3));
        let mut i = 0;
        while i + 16 <= n {
            let ld =
                |s: &[u8]| _mm256_cvtepu8_epi16(_mm_loadu_si128(s[i..].as_ptr() as *const __m128i));
            let yv = ld(y);
            let cbv = _mm256_sub_epi16(ld(cb), c128);
            let crv = _mm256_sub_epi16(ld(cr), c128);
            let r = _mm256_add_epi16(_mm256_add_epi16(yv, crv), madd_shift(crv, two, k_r, zero));
            let b = _mm256_add_epi16(
                _mm256_add_epi16(yv, _mm256_add_epi16(cbv, cbv)),
                madd_shift(cbv, two, k_b, zero),
            );
            let g = _mm256_add_epi16(_mm256_sub_epi16(yv, crv), madd_shift(cbv, crv, k_g, half));
            let rg = _mm256_packus_epi16(r, g);
            let bb = _mm256_packus_epi16(b, zero);
            let a = _mm256_or_si256(
                _mm256_shuffle_epi8(rg, m_rg_a),
                _mm256_shuffle_epi8(bb, m_b_a),
            );
            let t = _mm256_or_si256(
                _mm256_shuffle_epi8(rg, m_rg_b),
                _mm256_shuffle_epi8(bb, m_b_b),
            );
            let o = dst[3 * i..3 * i + 48].as_mut_ptr();
            _mm_storeu_si128(o as *mut __m128i, _mm256_castsi256_si128(a));
            _mm_storel_epi64(o.add(16) as *mut __m128i, _mm256_castsi256_si128(t));
            _mm_storeu_si128(o.add(24) as *mut __m128i, _mm256_extracti128_si256::<1>(a));
            _mm_storel_epi64(o.add(40) as *mut __m128i, _mm256_extracti128_si256::<1>(t));
            i += 16;
        }
        i
    }
}

/// IDCT of one block into `out` (row stride `stride`): a constant fill for
/// DC-only blocks (the value islow gives), else the full transform.
#[inline(always)]
fn idct_block(
    blk: &[i16; 64],
    last: usize,
    q: &[i32; 64],
    out: &mut [u8],
    stride: usize,
    simd: bool,
) {
    if last == 0 {
        let dc = (Wrapping(blk[0] as i32) * Wrapping(q[0])) << PASS1_BITS;
        let v = (((dc + Wrapping(1 << (PASS1_BITS + 2))) >> (PASS1_BITS + 3)).0 + 128).clamp(0, 255)
            as u8;
        for r in 0..8 {
            out[r * stride..r * stride + 8].fill(v);
        }
        return;
    }
    // zigzag positions up to 9 are the top-left 4x4
    let sparse = last <= 9;
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is only set when the CPU has AVX2.
        unsafe {
            if sparse {
                avx2::idct::<true>(blk, q, out, stride)
            } else {
                avx2::idct::<false>(blk, q, out, stride)
            }
        };
        return;
    }
    let _ = simd;
    if sparse {
        idct_portable::<true>(blk, q, out, stride)
    } else {
        idct_portable::<false>(blk, q, out, stride)
    }
}

fn have_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

// ------------------------------------------------------- headers

#[derive(Clone, Copy, Debug)]
struct Comp {
    id: u8,
    h: usize,
    v: usize,
    tq: usize,
    td: usize,
    ta: usize,
}

/// A parsed baseline or progressive JPEG, ready to decode.
pub struct Frame<'a> {
    pub width: usize,
    pub height: usize,
    comps: Vec<Comp>,
    hmax: usize,
    vmax: usize,
    qt: [[i32; 64]; 4],
    dc: Tables,
    ac: Tables,
    restart: usize,
    /// baseline: the entropy-coded data of the one scan; progressive: the
    /// stream from the first scan's SOS marker on
    scan: &'a [u8],
    progressive: bool,
}

fn be16(d: &[u8], p: usize) -> Option<usize> {
    Some(((*d.get(p)? as usize) << 8) | *d.get(p + 1)? as usize)
}

type Tables = [Option<Box<Huff>>; 4];

/// The Huffman tables of a DHT segment into `dc` / `ac`.
fn dht(mut s: &[u8], dc: &mut Tables, ac: &mut Tables) -> Option<()> {
    while !s.is_empty() {
        let (tc, th) = ((s[0] >> 4) as usize, (s[0] & 15) as usize);
        let counts: [u8; 16] = s.get(1..17)?.try_into().ok()?;
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        let syms = s.get(17..17 + n)?;
        if tc > 1 || th > 3 {
            return None;
        }
        let h = Huff::new(&counts, syms).ok()?;
        if tc == 0 {
            dc[th] = Some(h);
        } else {
            ac[th] = Some(h);
        }
        s = &s[17 + n..];
    }
    Some(())
}

impl<'a> Frame<'a> {
    /// Parse the headers up to the first scan; `None` when the stream is
    /// not a baseline or progressive JPEG this decoder handles (the caller uses zune-jpeg,
    /// which also reports malformed headers).
    pub fn parse(d: &'a [u8]) -> Option<Frame<'a>> {
        if d.get(..2)? != [0xFF, 0xD8] {
            return None;
        }
        let mut f = Frame {
            width: 0,
            height: 0,
            comps: Vec::new(),
            hmax: 1,
            vmax: 1,
            qt: [[0; 64]; 4],
            dc: [None, None, None, None],
            ac: [None, None, None, None],
            restart: 0,
            scan: &[],
            progressive: false,
        };
        let mut have_q = [false; 4];
        let mut p = 2;
        loop {
            if *d.get(p)? != 0xFF {
                return None;
            }
            while *d.get(p + 1)? == 0xFF {
                p += 1;
            }
            let m = d[p + 1];
            p += 2;
            if (0xD0..=0xD7).contains(&m) || m == 0x01 {
                continue;
            }
            let len = be16(d, p)?;
            if len < 2 {
                return None;
            }
            let seg = d.get(p + 2..p + len)?;
            match m {
                0xC0..=0xC2 => {
                    if !f.comps.is_empty() || seg.len() < 6 || seg[0] != 8 {
                        return None;
                    }
                    f.progressive = m == 0xC2;
                    f.height = be16(seg, 1)?;
                    f.width = be16(seg, 3)?;
                    let n = seg[5] as usize;
                    if f.width == 0 || f.height == 0 || !(n == 1 || n == 3) || seg.len() < 6 + 3 * n
                    {
                        return None;
                    }
                    for i in 0..n {
                        let c = &seg[6 + 3 * i..9 + 3 * i];
                        f.comps.push(Comp {
                            id: c[0],
                            h: (c[1] >> 4) as usize,
                            v: (c[1] & 15) as usize,
                            tq: c[2] as usize,
                            td: 0,
                            ta: 0,
                        });
                        if c[2] > 3 {
                            return None;
                        }
                    }
                    if n == 1 {
                        f.comps[0].h = 1;
                        f.comps[0].v = 1;
                    } else {
                        // Y at 1x1, 2x1 or 2x2; chroma 1x1; not RGB-coded
                        let y = f.comps[0];
                        let ok = matches!((y.h, y.v), (1, 1) | (2, 1) | (2, 2))
                            && f.comps[1..].iter().all(|c| c.h == 1 && c.v == 1)
                            && f.comps.iter().map(|c| c.id).collect::<Vec<_>>() != b"RGB";
                        if !ok {
                            return None;
                        }
                    }
                    f.hmax = f.comps.iter().map(|c| c.h).max()?;
                    f.vmax = f.comps.iter().map(|c| c.v).max()?;
                }
                // other frame types: lossless, hierarchical, arithmetic...
                0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => return None,
                0xC4 => dht(seg, &mut f.dc, &mut f.ac)?,
                0xDB => {
                    let mut s = seg;
                    while !s.is_empty() {
                        let (pq, tq) = ((s[0] >> 4) as usize, (s[0] & 15) as usize);
                        if pq > 1 || tq > 3 {
                            return None;
                        }
                        let n = 64 * (pq + 1);
                        let vals = s.get(1..1 + n)?;
                        for k in 0..64 {
                            let v = if pq == 0 {
                                vals[k] as i32
                            } else {
                                ((vals[2 * k] as i32) << 8) | vals[2 * k + 1] as i32
                            };
                            f.qt[tq][ZIGZAG[k] as usize] = v;
                        }
                        have_q[tq] = true;
                        s = &s[1 + n..];
                    }
                }
                0xDD => f.restart = be16(seg, 0)?,
                // Adobe: transform 0 means the three channels are RGB
                0xEE if seg.len() >= 12 && &seg[..5] == b"Adobe" && seg[11] == 0 => return None,
                0xDA if f.progressive => {
                    // the scans (and any tables between them) are read by
                    // `progressive`; the quantisation tables must be known
                    if !f.comps.iter().all(|c| have_q[c.tq]) {
                        return None;
                    }
                    f.scan = &d[p - 2..];
                    return Some(f);
                }
                0xDA => {
                    let n = *seg.first()? as usize;
                    if f.comps.is_empty() || n != f.comps.len() || seg.len() < 4 + 2 * n {
                        return None;
                    }
                    for i in 0..n {
                        let (cs, t) = (seg[1 + 2 * i], seg[2 + 2 * i]);
                        let c = f.comps.get_mut(i)?;
                        if c.id != cs {
                            return None;
                        }
                        c.td = (t >> 4) as usize;
                        c.ta = (t & 15) as usize;
                        if c.td > 3 || c.ta > 3 {
                            return None;
                        }
                    }
                    if seg[1 + 2 * n..4 + 2 * n] != [0, 63, 0] {
                        return None;
                    }
                    let ok = f
                        .comps
                        .iter()
                        .all(|c| have_q[c.tq] && f.dc[c.td].is_some() && f.ac[c.ta].is_some());
                    if !ok {
                        return None;
                    }
                    f.scan = &d[p + len..];
                    return Some(f);
                }
                0xD9 => return None,
                _ => {} // APPn, COM, ...
            }
            p += len;
        }
    }

    /// Channels the decoded pixels have before any gray -> RGB expansion.
    pub fn components(&self) -> usize {
        self.comps.len()
    }
}

// --------------------------------------------------------- decoding

/// Largest component plane a thread keeps between images (64 MiB).
const KEEP_PLANE_BYTES: usize = 1 << 26;

/// A progressive block's coefficients (natural order) and which zigzag
/// positions 1..64 are nonzero (bit k), so that refinement scans visit
/// only those.
#[derive(Clone, Copy)]
struct Coefs {
    c: [i16; 64],
    nz: u64,
}

const NO_COEFS: Coefs = Coefs { c: [0; 64], nz: 0 };

thread_local! {
    static PLANES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// A progressive image's coefficients, per component.
    static COEFS: std::cell::RefCell<Vec<Vec<Coefs>>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Plane {
    /// full padded size: mcus_x * h * 8 by mcus_y * v * 8
    w: usize,
    data: Vec<u8>,
}

impl Frame<'_> {
    /// Decode the pixels of `win` (clipped to the image) into `out`, HWC
    /// with `c` channels (1: gray / the Y channel; 3: RGB, gray replicated),
    /// rows of `win.w * c` bytes. Only the MCU rows down to the window's
    /// last are entropy-decoded, and only the MCUs around it transformed.
    pub fn decode(&self, win: Rect, c: usize, out: &mut [u8]) -> R<()> {
        if win.w == 0 || win.h == 0 || win.x + win.w > self.width || win.y + win.h > self.height {
            return Err(Bad("window outside the image"));
        }
        if !(c == 1 || c == 3) || out.len() != win.w * win.h * c {
            return Err(Bad("output size"));
        }
        let simd = have_avx2();
        let (mw, mh) = (8 * self.hmax, 8 * self.vmax);
        let (mx_n, my_n) = self.mcu_counts();
        // MCUs to transform: the window's, one more on each side for the
        // upsampling's neighbours
        let mx0 = (win.x / mw).saturating_sub(1);
        let mx1 = ((win.x + win.w - 1) / mw + 2).min(mx_n);
        let my0 = (win.y / mh).saturating_sub(1);
        let my1 = ((win.y + win.h - 1) / mh + 2).min(my_n);
        let ncomp = if c == 1 { 1 } else { self.comps.len() };
        let mut pool = PLANES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        if pool.len() < self.comps.len() {
            pool.resize_with(self.comps.len(), Vec::new); // (never shrunk: gray and colour images alternate)
        }
        let mut planes: Vec<Plane> = self
            .comps
            .iter()
            .zip(pool.iter_mut())
            .map(|(cp, buf)| {
                let w = mx_n * cp.h * 8;
                let n = w * my_n * cp.v * 8;
                let mut data = std::mem::take(buf);
                if data.len() < n {
                    data.resize(n, 0);
                }
                Plane { w, data }
            })
            .collect();
        let mut done = win.y;
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let stride = win.w * c;
        let emit = |planes: &[Plane], ready: usize| {
            // the window's rows below `ready` not written yet
            let end = ready.min(win.y + win.h);
            for y in done..end {
                let dst = &mut out[(y - win.y) * stride..(y - win.y + 1) * stride];
                self.row(planes, win, c, y, dst, &mut scratch);
            }
            done = done.max(end);
        };
        let mcus = (mx0, mx1, my0, my1);
        let res = if self.progressive {
            self.progressive(&mut planes, mcus, ncomp, simd, emit)
        } else {
            self.entropy(&mut planes, mcus, ncomp, simd, emit)
        };
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        for (buf, p) in pool.iter_mut().zip(planes) {
            // keep photo-sized planes for the next image, not a huge one's
            if p.data.len() <= KEEP_PLANE_BYTES {
                *buf = p.data;
            }
        }
        PLANES.with(|p| *p.borrow_mut() = pool);
        res
    }

    /// Entropy-decode the MCU rows down to `my1`, transforming the blocks
    /// of the first `ncomp` components in MCUs [mx0, mx1) x [my0, my1) into
    /// the planes; after each MCU row, `emit(planes, rows_ready)`.
    fn entropy(
        &self,
        planes: &mut [Plane],
        (mx0, mx1, my0, my1): (usize, usize, usize, usize),
        ncomp: usize,
        simd: bool,
        mut emit: impl FnMut(&[Plane], usize),
    ) -> R<()> {
        let mut br = Bits {
            data: self.scan,
            pos: 0,
            bits: 0,
            nbits: 0,
            pad: 0,
            overrun: 0,
        };
        let mx_n = self.mcu_counts().0;
        let mut preds = [0i32; 3];
        let mut blk = [0i16; 64];
        let mut todo = self.restart;
        let tabs: Vec<(&Huff, &Huff)> = self
            .comps
            .iter()
            .map(|cp| {
                (
                    self.dc[cp.td].as_deref().unwrap(),
                    self.ac[cp.ta].as_deref().unwrap(),
                )
            })
            .collect();
        for my in 0..my1 {
            let inside_y = my >= my0;
            for mx in 0..mx_n {
                if self.restart > 0 {
                    if todo == 0 {
                        br = br.restart()?;
                        preds = [0; 3];
                        todo = self.restart;
                    }
                    todo -= 1;
                }
                let inside = inside_y && mx >= mx0 && mx < mx1;
                for (ci, cp) in self.comps.iter().enumerate() {
                    let (dc, ac) = tabs[ci];
                    let transform = inside && ci < ncomp;
                    for by in 0..cp.v {
                        for bx in 0..cp.h {
                            let last = decode_block(&mut br, dc, ac, &mut preds[ci], &mut blk)?;
                            if transform {
                                let pl = &mut planes[ci];
                                let at = (my * cp.v + by) * 8 * pl.w + (mx * cp.h + bx) * 8;
                                idct_block(
                                    &blk,
                                    last,
                                    &self.qt[cp.tq],
                                    &mut pl.data[at..],
                                    pl.w,
                                    simd,
                                );
                            }
                            blk = [0; 64];
                        }
                    }
                }
            }
            br.check_overrun()?;
            if inside_y {
                emit(planes, self.rows_ready(my));
            }
        }
        Ok(())
    }

    /// MCUs across and down.
    fn mcu_counts(&self) -> (usize, usize) {
        (
            self.width.div_ceil(8 * self.hmax),
            self.height.div_ceil(8 * self.vmax),
        )
    }

    /// Rows of the image complete once MCU row `my` is transformed (the
    /// chroma neighbours below a row must be there for the upsampling).
    fn rows_ready(&self, my: usize) -> usize {
        let mh = 8 * self.vmax;
        if my + 1 == self.mcu_counts().1 {
            self.height
        } else {
            (my + 1) * mh - (self.vmax > 1) as usize
        }
    }

    /// A progressive JPEG: every scan's coefficients into one buffer per
    /// component (Huffman tables and the restart interval may change
    /// between scans), then the same transform and row output as the
    /// baseline path, only on MCUs [mx0, mx1) x [my0, my1).
    fn progressive(
        &self,
        planes: &mut [Plane],
        (mx0, mx1, my0, my1): (usize, usize, usize, usize),
        ncomp: usize,
        simd: bool,
        mut emit: impl FnMut(&[Plane], usize),
    ) -> R<()> {
        let (mx_n, my_n) = self.mcu_counts();
        let mut coefs = COEFS.with(|c| std::mem::take(&mut *c.borrow_mut()));
        if coefs.len() < self.comps.len() {
            coefs.resize_with(self.comps.len(), Vec::new);
        }
        for (cp, v) in self.comps.iter().zip(coefs.iter_mut()) {
            v.clear();
            v.resize(mx_n * cp.h * my_n * cp.v, NO_COEFS);
        }
        let res = self.scans(&mut coefs);
        if res.is_ok() {
            for my in my0..my1 {
                for mx in mx0..mx1 {
                    for (ci, cp) in self.comps.iter().enumerate().take(ncomp) {
                        let bw = mx_n * cp.h;
                        let pl = &mut planes[ci];
                        for by in 0..cp.v {
                            for bx in 0..cp.h {
                                let (row, col) = (my * cp.v + by, mx * cp.h + bx);
                                let blk = &coefs[ci][row * bw + col];
                                let last = 63 - (blk.nz | 1).leading_zeros() as usize;
                                let at = row * 8 * pl.w + col * 8;
                                idct_block(
                                    &blk.c,
                                    last,
                                    &self.qt[cp.tq],
                                    &mut pl.data[at..],
                                    pl.w,
                                    simd,
                                );
                            }
                        }
                    }
                }
                emit(planes, self.rows_ready(my));
            }
        }
        if coefs.iter().map(|v| v.len() * 136).sum::<usize>() <= KEEP_PLANE_BYTES {
            COEFS.with(|c| *c.borrow_mut() = coefs);
        }
        res
    }

    /// Read the segments from the first SOS on, decoding each scan into
    /// `coefs`, up to EOI (or the end of the data).
    fn scans(&self, coefs: &mut [Vec<Coefs>]) -> R<()> {
        let d = self.scan;
        let (mut dc, mut ac): (Tables, Tables) = (Default::default(), Default::default());
        let mut restart = self.restart;
        let mut p = 0;
        while p + 1 < d.len() {
            if d[p] != 0xFF {
                return Err(Bad("expected a marker between scans"));
            }
            let m = d[p + 1];
            p += 2;
            match m {
                0xFF => p -= 1, // fill byte
                0xD9 => return Ok(()),
                0xD0..=0xD7 | 0x01 => {}
                _ => {
                    let len = be16(d, p).ok_or(Bad("truncated segment"))?;
                    let seg = d.get(p + 2..p + len).ok_or(Bad("truncated segment"))?;
                    if len < 2 {
                        return Err(Bad("bad segment length"));
                    }
                    p += len;
                    match m {
                        0xC4 => dht(seg, &mut dc, &mut ac).ok_or(Bad("bad Huffman table"))?,
                        0xDD => restart = be16(seg, 0).ok_or(Bad("bad restart interval"))?,
                        // the IDCT would need the table as of each
                        // component's first scan (libjpeg); not supported
                        0xDB => return Err(Bad("quantisation table between scans")),
                        0xDA => {
                            // tables defined since the first scan, else the frame's
                            let dct: [Option<&Huff>; 4] =
                                std::array::from_fn(|i| dc[i].as_deref().or(self.dc[i].as_deref()));
                            let act: [Option<&Huff>; 4] =
                                std::array::from_fn(|i| ac[i].as_deref().or(self.ac[i].as_deref()));
                            p = self.scan_into(d, p, seg, &dct, &act, restart, coefs)?;
                        }
                        _ => {} // APPn, COM, DNL...
                    }
                }
            }
        }
        Ok(())
    }

    /// Decode one progressive scan (header `hdr`, entropy-coded data from
    /// `d[at..]`); returns where the next marker is.
    #[allow(clippy::too_many_arguments)]
    fn scan_into(
        &self,
        d: &[u8],
        at: usize,
        hdr: &[u8],
        dc: &[Option<&Huff>; 4],
        ac: &[Option<&Huff>; 4],
        restart: usize,
        coefs: &mut [Vec<Coefs>],
    ) -> R<usize> {
        let ns = *hdr.first().ok_or(Bad("empty scan header"))? as usize;
        if ns == 0 || ns > self.comps.len() || hdr.len() < 4 + 2 * ns {
            return Err(Bad("bad scan header"));
        }
        let mut members = [(0usize, 0usize, 0usize); 4];
        for (i, m) in members.iter_mut().enumerate().take(ns) {
            let (id, t) = (hdr[1 + 2 * i], hdr[2 + 2 * i]);
            let ci = self
                .comps
                .iter()
                .position(|c| c.id == id)
                .ok_or(Bad("scan of an unknown component"))?;
            *m = (ci, (t >> 4) as usize, (t & 15) as usize);
            if m.1 > 3 || m.2 > 3 {
                return Err(Bad("bad table index"));
            }
        }
        let members = &members[..ns];
        let (ss, se) = (hdr[1 + 2 * ns] as usize, hdr[2 + 2 * ns] as usize);
        let (ah, al) = ((hdr[3 + 2 * ns] >> 4) as u32, (hdr[3 + 2 * ns] & 15) as u32);
        let is_dc = ss == 0;
        if (is_dc && se != 0) || (!is_dc && (se < ss || se > 63 || ns != 1)) || ah > 13 || al > 13 {
            return Err(Bad("bad progressive scan parameters"));
        }
        for &(_, td, ta) in members {
            let need = if is_dc {
                ah == 0 && dc[td].is_none()
            } else {
                ac[ta].is_none()
            };
            if need {
                return Err(Bad("scan without its Huffman table"));
            }
        }
        let mut br = Bits {
            data: &d[at.min(d.len())..],
            pos: 0,
            bits: 0,
            nbits: 0,
            pad: 0,
            overrun: 0,
        };
        let mut preds = [0i32; 4];
        let mut eobrun = 0u32;
        let mut todo = restart;
        let (mx_n, my_n) = self.mcu_counts();
        // one unit: an MCU of an interleaved (DC) scan, else one block
        let (units_x, units_y) = if ns > 1 {
            (mx_n, my_n)
        } else {
            let cp = self.comps[members[0].0];
            let cw = (self.width * cp.h).div_ceil(self.hmax);
            let ch = (self.height * cp.v).div_ceil(self.vmax);
            (cw.div_ceil(8), ch.div_ceil(8))
        };
        for uy in 0..units_y {
            for ux in 0..units_x {
                if restart > 0 {
                    if todo == 0 {
                        br = br.restart()?;
                        preds = [0; 4];
                        eobrun = 0;
                        todo = restart;
                    }
                    todo -= 1;
                }
                for (k, &(ci, td, ta)) in members.iter().enumerate() {
                    let cp = self.comps[ci];
                    let bw = mx_n * cp.h;
                    let (nv, nh) = if ns > 1 { (cp.v, cp.h) } else { (1, 1) };
                    for by in 0..nv {
                        for bx in 0..nh {
                            let (row, col) = if ns > 1 {
                                (uy * cp.v + by, ux * cp.h + bx)
                            } else {
                                (uy, ux)
                            };
                            let blk = &mut coefs[ci][row * bw + col];
                            match (is_dc, ah == 0) {
                                (true, true) => {
                                    br.fill();
                                    let s = br.symbol(dc[td].unwrap())? as u32;
                                    if s > 16 {
                                        return Err(Bad("bad DC magnitude"));
                                    }
                                    preds[k] = preds[k].wrapping_add(extend(br.get(s), s));
                                    blk.c[0] = (preds[k] << al) as i16;
                                }
                                (true, false) => {
                                    br.fill();
                                    if br.get(1) != 0 {
                                        blk.c[0] |= (1i32 << al) as i16;
                                    }
                                }
                                (false, first) => {
                                    let band = if first { ac_first } else { ac_refine };
                                    band(&mut br, ac[ta].unwrap(), blk, ss, se, al, &mut eobrun)?
                                }
                            }
                        }
                    }
                }
            }
            br.check_overrun()?;
        }
        // the next marker: the reader never moves past one
        let mut q = at + br.pos;
        while q + 1 < d.len() {
            if d[q] == 0xFF && !matches!(d[q + 1], 0x00 | 0xFF | 0xD0..=0xD7) {
                return Ok(q);
            }
            q += 1;
        }
        Ok(d.len())
    }

    /// One output row of the window.
    fn row(
        &self,
        planes: &[Plane],
        win: Rect,
        c: usize,
        y: usize,
        dst: &mut [u8],
        s: &mut Scratch,
    ) {
        let yp = &planes[0];
        let yrow = &yp.data[y * yp.w + win.x..y * yp.w + win.x + win.w];
        if self.comps.len() == 1 || c == 1 {
            if c == 1 {
                dst.copy_from_slice(yrow);
            } else {
                for (px, &g) in dst.chunks_exact_mut(3).zip(yrow) {
                    px.fill(g);
                }
            }
            return;
        }
        let (cb, cr) = (&planes[1], &planes[2]);
        let (h, v) = (self.hmax, self.vmax);
        let cw = self.width.div_ceil(h); // chroma samples that are real
        let chh = self.height.div_ceil(v);
        if h == 1 {
            let cy = y; // v == 1 too
            let o = cy * cb.w + win.x;
            ycc_rgb_row(yrow, &cb.data[o..o + win.w], &cr.data[o..o + win.w], dst);
            return;
        }
        // 2x horizontal (and maybe vertical) triangle upsampling over the
        // chroma columns [i0, i1) covering the window
        let (i0, i1) = (win.x / 2, (win.x + win.w).div_ceil(2));
        let cy = y / v;
        let near = if v == 1 {
            None
        } else if y.is_multiple_of(2) {
            Some(cy.saturating_sub(1))
        } else {
            Some((cy + 1).min(chh - 1))
        };
        let fancy = cw > 2;
        s.cb.clear();
        s.cr.clear();
        for (pl, up) in [(cb, &mut s.cb), (cr, &mut s.cr)] {
            let row = &pl.data[cy * pl.w..(cy + 1) * pl.w];
            let nrow = near.map(|ny| &pl.data[ny * pl.w..(ny + 1) * pl.w]);
            upsample_row(row, nrow, cw, i0, i1, fancy, &mut s.sum, up);
        }
        let off = win.x - 2 * i0;
        ycc_rgb_row(yrow, &s.cb[off..off + win.w], &s.cr[off..off + win.w], dst);
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Row buffers for the upsampling, kept per thread.
#[derive(Default)]
struct Scratch {
    sum: Vec<u16>,
    cb: Vec<u8>,
    cr: Vec<u8>,
}

/// libjpeg's 2x horizontal "fancy" upsampling of one chroma row (with the
/// vertical 3:1 blend with `near` for 4:2:0), producing output columns
/// [2 * i0, 2 * i1) into `up`. `cw` is the count of real chroma columns
/// (edges replicate); `fancy = false` repeats samples (libjpeg does for
/// rows of at most two samples).
#[allow(clippy::too_many_arguments)]
fn upsample_row(
    row: &[u8],
    near: Option<&[u8]>,
    cw: usize,
    i0: usize,
    i1: usize,
    fancy: bool,
    sum: &mut Vec<u16>,
    up: &mut Vec<u8>,
) {
    let n = i1 - i0;
    up.resize(2 * n, 0);
    if !fancy {
        for (o, &x) in up.chunks_exact_mut(2).zip(&row[i0..i1]) {
            o.fill(x);
        }
        return;
    }
    // sum[k] = column sum of chroma column i0 - 1 + k, for k in 0..n + 2,
    // the image's edge columns repeated
    let (lo, hi) = (i0.saturating_sub(1), (i1 + 1).min(cw));
    sum.clear();
    if i0 == 0 {
        sum.push(0);
    }
    match near {
        Some(nr) => sum.extend(
            row[lo..hi]
                .iter()
                .zip(&nr[lo..hi])
                .map(|(&a, &b)| 3 * a as u16 + b as u16),
        ),
        None => sum.extend(row[lo..hi].iter().map(|&a| a as u16)),
    }
    if i0 == 0 {
        sum[0] = sum[1];
    }
    if hi == i1 {
        sum.push(sum[sum.len() - 1]);
    }
    if near.is_some() {
        spread::<8, 7, 4>(&sum[..n + 2], &mut up[..2 * n]);
    } else {
        spread::<1, 2, 2>(&sum[..n + 2], &mut up[..2 * n]);
    }
}

/// out[2m] = (3 s[m+1] + s[m] + BE) >> SH, out[2m+1] = (3 s[m+1] + s[m+2] + BO) >> SH.
#[inline(always)]
fn spread<const BE: u16, const BO: u16, const SH: u16>(s: &[u16], out: &mut [u8]) {
    let n = out.len() / 2;
    let (prev, cur, next) = (&s[..n], &s[1..n + 1], &s[2..n + 2]);
    for m in 0..n {
        let c3 = 3 * cur[m];
        out[2 * m] = ((c3 + prev[m] + BE) >> SH) as u8;
        out[2 * m + 1] = ((c3 + next[m] + BO) >> SH) as u8;
    }
}

/// libjpeg's YCbCr -> RGB (16-bit fixed point, its rounding) for one row.
fn ycc_rgb_row(y: &[u8], cb: &[u8], cr: &[u8], dst: &mut [u8]) {
    let n = y.len().min(cb.len()).min(cr.len()).min(dst.len() / 3);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if have_avx2() {
        // SAFETY: AVX2 checked; the function reads and writes within the
        // first n pixels of each slice.
        done = unsafe { avx2::ycc_rgb(&y[..n], &cb[..n], &cr[..n], &mut dst[..3 * n]) };
    }
    ycc_rgb_portable(
        &y[done..n],
        &cb[done..n],
        &cr[done..n],
        &mut dst[3 * done..3 * n],
    );
}

fn ycc_rgb_portable(y: &[u8], cb: &[u8], cr: &[u8], dst: &mut [u8]) {
    const ONE_HALF: i32 = 1 << 15;
    for (((px, &yy), &b), &r) in dst.chunks_exact_mut(3).zip(y).zip(cb).zip(cr) {
        let (yy, cb, cr) = (yy as i32, b as i32 - 128, r as i32 - 128);
        let rr = yy + ((91881 * cr + ONE_HALF) >> 16);
        let gg = yy + ((-22554 * cb - 46802 * cr + ONE_HALF) >> 16);
        let bb = yy + ((116130 * cb + ONE_HALF) >> 16);
        px[0] = rr.clamp(0, 255) as u8;
        px[1] = gg.clamp(0, 255) as u8;
        px[2] = bb.clamp(0, 255) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Rng;

    fn load(name: &str) -> Vec<u8> {
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/images");
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn simd_paths_match_portable_ones() {
        if !have_avx2() {
            return;
        }
        let mut rng = Rng::seeded(5);
        for round in 0..400 {
            let mut blk = [0i16; 64];
            let mut q = [0i32; 64];
            let dense = round % 3 == 0;
            for k in 0..64 {
                q[k] = 1 + (rng.uniform() * if round % 2 == 0 { 16.0 } else { 255.0 }) as i32;
                if dense || k < 10 || rng.uniform() < 0.1 {
                    blk[k] = ((rng.uniform() - 0.5) * if k == 0 { 2048.0 } else { 256.0 }) as i16;
                }
            }
            let (mut a, mut b) = ([0u8; 80], [0u8; 80]);
            idct_portable::<false>(&blk, &q, &mut a, 10);
            #[cfg(target_arch = "x86_64")]
            unsafe {
                avx2::idct::<false>(&blk, &q, &mut b, 10)
            };
            assert_eq!(a, b, "round {round}");
            // the sparse variants on the block's top-left 4x4: the dense result
            let mut top = [0i16; 64];
            for &z in &ZIGZAG[..10] {
                top[z as usize] = blk[z as usize];
            }
            let (mut d, mut sp, mut sv) = ([0u8; 80], [0u8; 80], [0u8; 80]);
            idct_portable::<false>(&top, &q, &mut d, 10);
            idct_portable::<true>(&top, &q, &mut sp, 10);
            #[cfg(target_arch = "x86_64")]
            unsafe {
                avx2::idct::<true>(&top, &q, &mut sv, 10)
            };
            assert_eq!(d, sp, "sparse round {round}");
            assert_eq!(d, sv, "sparse simd round {round}");
        }
        for n in [0, 1, 15, 16, 17, 47, 64, 99] {
            let px = |rng: &mut Rng| {
                (0..n)
                    .map(|_| (rng.uniform() * 256.0) as u8)
                    .collect::<Vec<_>>()
            };
            let (y, cb, cr) = (px(&mut rng), px(&mut rng), px(&mut rng));
            let (mut a, mut b) = (vec![0u8; 3 * n], vec![0u8; 3 * n]);
            ycc_rgb_portable(&y, &cb, &cr, &mut a);
            ycc_rgb_row(&y, &cb, &cr, &mut b);
            assert_eq!(a, b, "{n} pixels");
        }
    }

    #[test]
    fn over_subscribed_huffman_tables_are_refused() {
        // three codes of length 1; two of length 1 then one of length 2
        // (the third code would start past the 9-bit lookahead table: a
        // 20,000-round fuzz run found this one panicking)
        let mut counts = [0u8; 16];
        counts[0] = 3;
        assert!(Huff::new(&counts, &[1, 2, 3]).is_err());
        counts[0] = 2;
        counts[1] = 1;
        assert!(Huff::new(&counts, &[1, 2, 3]).is_err());
        // a full table is fine: two codes of length 1
        counts[1] = 0;
        assert!(Huff::new(&counts, &[4, 5]).is_ok());
    }

    #[test]
    fn dc_only_fill_is_the_full_transform() {
        let q = [3i32; 64];
        for dc in [-1100i16, -300, -3, 0, 5, 170, 700] {
            let mut blk = [0i16; 64];
            blk[0] = dc;
            let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
            idct_block(&blk, 0, &q, &mut a, 8, false);
            idct_portable::<false>(&blk, &q, &mut b, 8);
            assert_eq!(a, b, "dc {dc}");
        }
    }

    #[test]
    fn unsupported_streams_are_left_to_the_fallback() {
        assert!(
            Frame::parse(&load("hubble_800x600_progressive.jpg"))
                .unwrap()
                .progressive
        );
        // arithmetic coding (SOF9): zune-jpeg's
        let mut arith = load("coffee_500x500_422.jpg");
        let sof = arith.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        arith[sof + 1] = 0xC9;
        assert!(Frame::parse(&arith).is_none());
        // a quantisation table between progressive scans
        let mut prog = load("retina_48x36_prog_444.jpg");
        let sos = prog.windows(2).rposition(|w| w == [0xFF, 0xDA]).unwrap();
        let dqt: Vec<u8> = [&[0xFF, 0xDB, 0, 67, 0][..], &[1u8; 64][..]].concat();
        prog.splice(sos..sos, dqt);
        let f = Frame::parse(&prog).unwrap();
        let all = Rect {
            x: 0,
            y: 0,
            w: 48,
            h: 36,
        };
        let mut px = vec![0u8; 48 * 36 * 3];
        assert_eq!(
            f.decode(all, 3, &mut px),
            Err(Bad("quantisation table between scans"))
        );
        assert!(Frame::parse(b"\xFF\xD8\xFF").is_none());
        assert!(Frame::parse(&[]).is_none());
        let coffee = load("coffee_500x500_422.jpg");
        let f = Frame::parse(&coffee).unwrap();
        assert_eq!((f.width, f.height, f.components()), (500, 500, 3));
        let mut out = vec![0u8; 12];
        let bad = Rect {
            x: 499,
            y: 0,
            w: 2,
            h: 2,
        };
        assert!(f.decode(bad, 3, &mut out).is_err());
        let ok = Rect {
            x: 498,
            y: 0,
            w: 2,
            h: 2,
        };
        assert!(f.decode(ok, 3, &mut out[..]).is_ok());
        assert!(f.decode(ok, 3, &mut out[..11]).is_err());
    }

    /// Random corruption of the headers and the entropy-coded data: every
    /// outcome is a parse refusal, an error or pixels, never a panic.
    #[test]
    fn corrupt_streams_never_panic() {
        let mut rng = Rng::seeded(9);
        for name in [
            "chelsea_160x107_thumb.jpg",
            "astronaut_640x480_restart.jpg",
            "rocket_45x31_420.jpg",
            "rocket_45x31_prog_420_rst.jpg",
            "coffee_50x40_prog_422.jpg",
            "clock_40x30_prog_gray.jpg",
            "retina_48x36_prog_444.jpg",
        ] {
            let good = load(name);
            let rounds = crate::io::fuzz_rounds(150);
            for round in 0..rounds {
                let mut d = good.clone();
                let flips = 1 + (rng.uniform() * 20.0) as usize;
                for _ in 0..flips {
                    // mostly the scan, sometimes the headers
                    let lo = if round % 4 == 0 { 2 } else { d.len() / 3 };
                    let at = lo + (rng.uniform() * (d.len() - lo) as f64) as usize;
                    let at = at.min(d.len() - 1);
                    d[at] = (rng.uniform() * 256.0) as u8;
                }
                if round % 5 == 0 {
                    d.truncate(d.len() / 2 + (rng.uniform() * (d.len() / 2) as f64) as usize);
                }
                let Some(f) = Frame::parse(&d) else { continue };
                if f.width * f.height > 1 << 22 {
                    continue;
                }
                for c in [1, 3] {
                    let mut out = vec![0u8; f.width * f.height * c];
                    let all = Rect {
                        x: 0,
                        y: 0,
                        w: f.width,
                        h: f.height,
                    };
                    let _ = f.decode(all, c, &mut out);
                }
            }
        }
    }
}
