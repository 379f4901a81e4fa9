//! 3x3 stride-1 float32 convolution by Winograd's minimal filtering
//! F(2x2, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural
//! Networks", 2016).
//!
//! Each 2x2 output tile is `A^T [ (G g G^T) . (B^T d B) ] A` for the 4x4
//! input tile `d` it sees and the 3x3 filter `g`; summed over input
//! channels, the element-wise product becomes 16 independent GEMMs (one
//! per point of the 4x4 transformed tile): `M[xi] (Cout x tiles) =
//! U[xi] (Cout x Cin) . V[xi] (Cin x tiles)`. That is 16 multiplies per
//! tile and channel pair instead of 36: 2.25x fewer FLOPs than the direct
//! convolution. The transforms only add, subtract and halve, so results
//! stay within a few ulps of the direct sum (unlike the larger F(4x4, 3x3),
//! whose transforms amplify rounding).
//!
//! The weight gradient uses the same transforms: `dU[xi] = sum over tiles
//! of (A dy A^T)[xi] . V[xi]^T`, then `dw = G^T dU G`. The data gradient at
//! stride 1 is itself such a convolution (of dy with the flipped,
//! channel-swapped filters; see `conv_bwd_data`), so it runs here too.
//!
//! Work is split into blocks of ~128 tiles (rows of tiles, spanning images
//! when they are small), so one large image still uses every core and
//! small late-layer images still make wide GEMMs; a block's transformed
//! input and products stay in cache. `OXNET_CONV_WINOGRAD=0` turns the
//! algorithm off (the direct GEMM formulation then runs), for comparison.
//!
//! As with any Winograd convolution, an infinite input can make some
//! outputs NaN where the direct sum gives +-Inf (Inf - Inf in a transform).
use super::conv::{Geo, SendPtr};
use crate::par::{par_for_init, par_map};

/// Tiles per block: the transformed input (16 x Cin x tiles) and the
/// products (16 x Cout x tiles) of one block, 512 KiB each at 64 channels,
/// stay in L2/L3 (64 tiles ran slower: the filters are repacked for every
/// block's 16 products).
const BLOCK_TILES: usize = 128;

/// Whether `OXNET_CONV_WINOGRAD` leaves the algorithm on (default: on).
fn enabled() -> bool {
    use std::sync::OnceLock;
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("OXNET_CONV_WINOGRAD").map_or(true, |v| v.trim() != "0"))
}

/// Fewer channels than this on either side stay on the direct GEMM: the
/// transforms cost per channel what the GEMMs save per channel pair, and
/// at 32 channels (56x56 images) the two were even; from 64 on Winograd
/// wins (1.3-1.5x at 64-512 channels).
const MIN_CHANNELS: usize = 64;

/// Whether the geometry is one this module computes: 2-D, 3x3 kernel,
/// stride 1, no dilation, one group.
fn applicable(g: &Geo) -> bool {
    g.g == 1
        && g.k == [1, 3, 3]
        && g.s == [1, 1, 1]
        && g.d == [1, 1, 1]
        && g.xs[0] == 1
        && g.p[0] == 0
}

/// Whether a convolution of geometry `g` in element type `T` runs here:
/// float32, [`applicable`], and enough channels on both sides for the
/// GEMMs to outweigh the transforms.
pub fn eligible<T: 'static>(g: &Geo) -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
        && applicable(g)
        && g.cin >= MIN_CHANNELS
        && g.cout >= MIN_CHANNELS
        && enabled()
}

/// `C (m x n) = [C +] A (m x k) . B (k x n)` in f32 on oxnet's sgemm where
/// the CPU has it, else the `gemm` crate.
/// # Safety
/// As for `sgemm`: the pointers cover the strided matrices; C aliases neither.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm32(
    (m, n, k): (usize, usize, usize),
    c: *mut f32,
    crs: isize,
    acc: bool,
    a: *const f32,
    (ars, acs): (isize, isize),
    b: *const f32,
    (brs, bcs): (isize, isize),
    threads: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if crate::ops::sgemm::available() {
        crate::ops::sgemm::sgemm(m, n, k, c, crs, 1, acc, a, ars, acs, b, brs, bcs, threads);
        return;
    }
    let par = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    super::conv::mm(m, n, k, c, crs, 1, acc, a, ars, acs, b, brs, bcs, par);
}

/// Tiling: each image has `th x tw` tiles of 2x2 outputs; the `n * th`
/// tile rows of all images, in order, are cut into blocks of `rows` rows,
/// so a block may span several small images (the GEMMs then stay wide).
struct Tiling {
    th: usize,
    tw: usize,
    rows: usize,
    blocks: usize,
}

/// Tile rows `[r0, r1)` of image `img`, stored from column `col0` of a
/// block's `nt` tile columns.
#[derive(Clone, Copy)]
struct Seg {
    img: usize,
    r0: usize,
    r1: usize,
    col0: usize,
    nt: usize,
}

impl Tiling {
    fn new(g: &Geo) -> Tiling {
        let (th, tw) = (g.ys[1].div_ceil(2), g.ys[2].div_ceil(2));
        let total = g.n * th;
        let rows = (BLOCK_TILES / tw).clamp(1, total.max(1));
        Tiling {
            th,
            tw,
            rows,
            blocks: total.div_ceil(rows),
        }
    }
    /// Block `b`'s tile count and its per-image segments.
    fn segments(&self, b: usize, n: usize) -> (usize, Vec<Seg>) {
        let (g0, g1) = (b * self.rows, ((b + 1) * self.rows).min(n * self.th));
        let nt = (g1 - g0) * self.tw;
        let segs = (g0 / self.th..g1.div_ceil(self.th))
            .map(|img| {
                let (a, e) = (g0.max(img * self.th), g1.min((img + 1) * self.th));
                Seg {
                    img,
                    r0: a - img * self.th,
                    r1: e - img * self.th,
                    col0: (a - g0) * self.tw,
                    nt,
                }
            })
            .collect();
        (nt, segs)
    }
    fn max_tiles(&self) -> usize {
        self.rows * self.tw
    }
}

/// Per-thread buffers: transformed input `v` (16 x Cin x tiles), products
/// or transformed output gradient `m` (16 x Cout x tiles), and row scratch.
struct Scratch {
    v: Vec<f32>,
    m: Vec<f32>,
    rows: Vec<f32>,
    eo: Vec<f32>,
}

impl Scratch {
    fn new(g: &Geo, t: &Tiling) -> Scratch {
        let nt = t.max_tiles();
        Scratch {
            v: vec![0.0; 16 * g.cin * nt],
            m: vec![0.0; 16 * g.cout * nt],
            rows: vec![0.0; 4 * (2 * t.tw + 2)],
            eo: vec![0.0; 2 * (t.tw + 1)],
        }
    }
}

/// `U[xi][ci][co] = (G w G^T)[xi]` for the (Cout, Cin, 3, 3) filters:
/// each U[xi] column-major, which the GEMM packs by plain copies.
fn transform_filters(g: &Geo, w: &[f32]) -> Vec<f32> {
    let (co_n, ci_n) = (g.cout, g.cin);
    let mut u = vec![0.0f32; 16 * co_n * ci_n];
    let up = SendPtr(u.as_mut_ptr());
    // in parallel over input channels; for one channel and transform point
    // the output channels are contiguous
    crate::par::par_for(ci_n.div_ceil(16), &|chunk| {
        for ci in chunk * 16..((chunk + 1) * 16).min(ci_n) {
            for co in 0..co_n {
                let f = &w[(co * ci_n + ci) * 9..][..9];
                // G f: 4x3, rows (f0, (f0+f1+f2)/2, (f0-f1+f2)/2, f2)
                let mut gf = [[0.0f32; 3]; 4];
                for j in 0..3 {
                    let (a, b, c) = (f[j], f[3 + j], f[6 + j]);
                    gf[0][j] = a;
                    gf[1][j] = 0.5 * (a + b + c);
                    gf[2][j] = 0.5 * (a - b + c);
                    gf[3][j] = c;
                }
                for (i, r) in gf.iter().enumerate() {
                    let (a, b, c) = (r[0], r[1], r[2]);
                    let row = [a, 0.5 * (a + b + c), 0.5 * (a - b + c), c];
                    for (j, &val) in row.iter().enumerate() {
                        // SAFETY: inside u; only this task writes column ci.
                        unsafe { *up.get().add(((i * 4 + j) * ci_n + ci) * co_n + co) = val };
                    }
                }
            }
        }
    });
    u
}

/// Padded input row `r` (padded coordinates: the image starts at row and
/// column `p`) of a channel plane, split into its even and odd columns:
/// `e[j]` is padded column 2j, `o[j]` column 2j+1; zeros outside the image.
#[inline(always)]
fn split_row(
    plane: &[f32],
    (h, w): (usize, usize),
    (ph, pw): (usize, usize),
    r: usize,
    e: &mut [f32],
    o: &mut [f32],
) {
    e.fill(0.0);
    o.fill(0.0);
    if r < ph || r - ph >= h {
        return;
    }
    let src = &plane[(r - ph) * w..][..w];
    // image column c sits at padded column c + pw
    let (first, second, off1, off2) = if pw % 2 == 0 {
        (e, o, pw / 2, pw / 2)
    } else {
        (o, e, pw / 2, pw / 2 + 1)
    };
    deinterleave(src, &mut first[off1..], &mut second[off2..]);
}

/// Ask the caches for rows [r0, r1) (clamped to the plane) of a plane of
/// rows `w` long. A block reads or writes only a few rows of each channel
/// plane before moving to the next plane, too little for the hardware
/// prefetcher to pick up: the transforms fetch the next channel's rows
/// while they work on the current one.
#[inline(always)]
fn prefetch_rows(plane: &[f32], w: usize, r0: usize, r1: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let lo = (r0 * w).min(plane.len());
        let hi = (r1 * w).min(plane.len());
        if lo < hi {
            let p = plane.as_ptr();
            let mut i = lo;
            while i < hi {
                // SAFETY: i < plane.len(); prefetching never faults.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(i) as *const i8) };
                i += 16;
            }
            // SAFETY: hi - 1 < plane.len()
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(hi - 1) as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (plane, w, r0, r1);
}

/// `dst = a + sb * b`, element-wise.
#[inline(always)]
fn lin(dst: &mut [f32], a: &[f32], b: &[f32], sb: f32) {
    for ((d, x), y) in dst.iter_mut().zip(a).zip(b) {
        *d = x + sb * y;
    }
}

/// Input transform of one image's segment into `s.v` (16 x Cin x nt, the
/// segment's tiles row-major from column col0).
#[inline(always)]
fn transform_input_impl(g: &Geo, t: &Tiling, x: &[f32], sg: Seg, s: &mut Scratch) {
    let (h, w) = (g.xs[1], g.xs[2]);
    let tw = t.tw;
    let (r0, r1, nt) = (sg.r0, sg.r1, sg.nt);
    let n1 = tw + 1;
    let (rows, eo, v) = (&mut s.rows, &mut s.eo, &mut s.v);
    // image rows the segment reads: padded rows 2 r0 ..= 2 r1 + 1
    let (ir0, ir1) = (
        (2 * r0).saturating_sub(g.p[1]),
        (2 * r1 + 2).saturating_sub(g.p[1]),
    );
    for ci in 0..g.cin {
        let plane = &x[ci * h * w..][..h * w];
        if ci + 1 < g.cin {
            prefetch_rows(&x[(ci + 1) * h * w..][..h * w], w, ir0, ir1);
        }
        for ty in r0..r1 {
            // rows[(2i)*n1..] even columns of padded row 2ty+i, then odd;
            // rows 2ty+2 and 2ty+3 are the next tile row's first two.
            let fresh = if ty == r0 {
                0
            } else {
                rows.copy_within(4 * n1..8 * n1, 0);
                2
            };
            for i in fresh..4 {
                let (e, o) = rows[2 * i * n1..][..2 * n1].split_at_mut(n1);
                split_row(plane, (h, w), (g.p[1], g.p[2]), 2 * ty + i, e, o);
            }
            let d = |i: usize, odd: usize| &rows[(2 * i + odd) * n1..][..n1];
            let base = sg.col0 + (ty - r0) * tw;
            // B^T d: rows d0-d2, d1+d2, d2-d1, d1-d3; then B across columns.
            for (i, &(a, b, sb)) in [(0, 2, -1.0), (1, 2, 1.0), (2, 1, -1.0), (1, 3, -1.0)]
                .iter()
                .enumerate()
            {
                let (e, o) = eo.split_at_mut(n1);
                lin(e, d(a, 0), d(b, 0), sb);
                lin(o, d(a, 1), d(b, 1), sb);
                let (e0, e1, o0, o1) = (&e[..tw], &e[1..], &o[..tw], &o[1..]);
                let at = |j: usize| (((i * 4 + j) * g.cin + ci) * nt) + base;
                lin(&mut v[at(0)..][..tw], e0, e1, -1.0);
                lin(&mut v[at(1)..][..tw], o0, e1, 1.0);
                lin(&mut v[at(2)..][..tw], e1, o0, -1.0);
                lin(&mut v[at(3)..][..tw], o0, o1, -1.0);
            }
        }
    }
}

/// `dst = off + (a + b + c)` (`sign` 1) or `off + (a - b - c)` (`sign` -1),
/// element-wise.
#[inline(always)]
fn sum3(dst: &mut [f32], a: &[f32], b: &[f32], c: &[f32], sign: f32, off: f32) {
    for (((d, x), y), z) in dst.iter_mut().zip(a).zip(b).zip(c) {
        *d = off + (x + sign * (y + z));
    }
}

/// Output transform of the products `s.m` (16 x Cout x tiles) of tile rows
/// of one segment into its image's output `y` (Cout, H, W), plus `bias`.
#[inline(always)]
fn transform_output_impl(
    g: &Geo,
    t: &Tiling,
    sg: Seg,
    s: &mut Scratch,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    let (h, w) = (g.ys[1], g.ys[2]);
    let tw = t.tw;
    let (r0, r1, nt) = (sg.r0, sg.r1, sg.nt);
    let (z, eo, m) = (&mut s.rows, &mut s.eo, &s.m);
    for co in 0..g.cout {
        let bv = bias.map_or(0.0, |b| b[co]);
        if co + 1 < g.cout {
            prefetch_rows(&y[(co + 1) * h * w..][..h * w], w, 2 * r0, 2 * r1);
        }
        for ty in r0..r1 {
            let base = sg.col0 + (ty - r0) * tw;
            let m = |i: usize, j: usize| &m[((i * 4 + j) * g.cout + co) * nt + base..][..tw];
            // A^T m: z[a][j] (a = output row) = m0j + m1j + m2j, m1j - m2j - m3j
            for j in 0..4 {
                let (za, zb) = z[..8 * tw].split_at_mut(4 * tw);
                let (m0, m1, m2, m3) = (m(0, j), m(1, j), m(2, j), m(3, j));
                for (((d, x), y), q) in za[j * tw..][..tw].iter_mut().zip(m0).zip(m1).zip(m2) {
                    *d = x + y + q;
                }
                for (((d, x), y), q) in zb[j * tw..][..tw].iter_mut().zip(m1).zip(m2).zip(m3) {
                    *d = x - y - q;
                }
            }
            for a in 0..2 {
                let oy = 2 * ty + a;
                if oy >= h {
                    break;
                }
                let zr = |j: usize| &z[(a * 4 + j) * tw..][..tw];
                // (z A): even output columns z0 + z1 + z2, odd z1 - z2 - z3
                let (ev, od) = eo.split_at_mut(tw + 1);
                sum3(&mut ev[..tw], zr(0), zr(1), zr(2), 1.0, bv);
                sum3(&mut od[..tw], zr(1), zr(2), zr(3), -1.0, bv);
                let out = &mut y[(co * h + oy) * w..][..w];
                for ((p, e), o) in out.chunks_exact_mut(2).zip(&ev[..tw]).zip(&od[..tw]) {
                    p[0] = *e;
                    p[1] = *o;
                }
                if w % 2 == 1 {
                    out[w - 1] = ev[w / 2];
                }
            }
        }
    }
}

/// Transform of the output gradient (A dy A^T) of one image's segment into
/// `s.m` (16 x Cout x nt); outputs past the edge count as zero.
#[inline(always)]
fn transform_grad_impl(g: &Geo, t: &Tiling, dy: &[f32], sg: Seg, s: &mut Scratch) {
    let (h, w) = (g.ys[1], g.ys[2]);
    let tw = t.tw;
    let (r0, r1, nt) = (sg.r0, sg.r1, sg.nt);
    // e/o of the two dy rows: rows[0..4][tx] = e0, o0, e1, o1
    let (rows, pq, m) = (&mut s.rows, &mut s.eo, &mut s.m);
    for co in 0..g.cout {
        let plane = &dy[co * h * w..][..h * w];
        if co + 1 < g.cout {
            prefetch_rows(&dy[(co + 1) * h * w..][..h * w], w, 2 * r0, 2 * r1);
        }
        for ty in r0..r1 {
            rows[..4 * tw].fill(0.0);
            for a in 0..2 {
                let oy = 2 * ty + a;
                if oy < h {
                    let (e, o) = rows[2 * a * tw..][..2 * tw].split_at_mut(tw);
                    deinterleave(&plane[oy * w..][..w], e, o);
                }
            }
            let base = sg.col0 + (ty - r0) * tw;
            let (e0, rest) = rows.split_at(tw);
            let (o0, rest) = rest.split_at(tw);
            let (e1, o1) = (&rest[..tw], &rest[tw..2 * tw]);
            // A dy: rows r0, r0+r1, r0-r1, -r1; then the same across columns.
            for i in 0..4 {
                let (pe, po) = pq.split_at_mut(tw + 1);
                let (pe, po) = (&mut pe[..tw], &mut po[..tw]);
                match i {
                    0 => {
                        pe.copy_from_slice(e0);
                        po.copy_from_slice(o0);
                    }
                    1 | 2 => {
                        let sb = if i == 1 { 1.0 } else { -1.0 };
                        lin(pe, e0, e1, sb);
                        lin(po, o0, o1, sb);
                    }
                    _ => {
                        neg(pe, e1);
                        neg(po, o1);
                    }
                }
                let at = |j: usize| (((i * 4 + j) * g.cout + co) * nt) + base;
                m[at(0)..][..tw].copy_from_slice(pe);
                lin(&mut m[at(1)..][..tw], pe, po, 1.0);
                lin(&mut m[at(2)..][..tw], pe, po, -1.0);
                neg(&mut m[at(3)..][..tw], po);
            }
        }
    }
}

/// `dst = -a`, element-wise.
#[inline(always)]
fn neg(dst: &mut [f32], a: &[f32]) {
    for (d, x) in dst.iter_mut().zip(a) {
        *d = -x;
    }
}

/// `e[m] = src[2m]`, `o[m] = src[2m + 1]`; an odd last element goes to `e`.
#[inline(always)]
fn deinterleave(src: &[f32], e: &mut [f32], o: &mut [f32]) {
    for ((p, a), b) in src.chunks_exact(2).zip(e.iter_mut()).zip(o.iter_mut()) {
        *a = p[0];
        *b = p[1];
    }
    if src.len() % 2 == 1 {
        e[src.len() / 2] = src[src.len() - 1];
    }
}

/// `$name(args)` runs `$imp(args)` compiled for AVX2+FMA when the CPU has
/// them (the transforms are element-wise slice loops that then run 8 lanes
/// wide instead of SSE's 4), else the baseline build.
macro_rules! wide_dispatch {
    ($name:ident, $avx:ident, $imp:ident, ($($a:ident: $t:ty),*)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $avx($($a: $t),*) {
            $imp($($a),*)
        }
        fn $name($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            if crate::ops::kernels::wide_cpu() {
                // SAFETY: the CPU has AVX2 and FMA.
                return unsafe { $avx($($a),*) };
            }
            $imp($($a),*)
        }
    };
}
wide_dispatch!(transform_input, transform_input_avx2, transform_input_impl,
    (g: &Geo, t: &Tiling, x: &[f32], sg: Seg, s: &mut Scratch));
wide_dispatch!(transform_output, transform_output_avx2, transform_output_impl,
    (g: &Geo, t: &Tiling, sg: Seg, s: &mut Scratch, bias: Option<&[f32]>, y: &mut [f32]));
wide_dispatch!(transform_grad, transform_grad_avx2, transform_grad_impl,
    (g: &Geo, t: &Tiling, dy: &[f32], sg: Seg, s: &mut Scratch));

/// Work items (blocks) and whether they run in parallel (each GEMM then
/// single-threaded) or one after another (each GEMM on every thread).
fn schedule(t: &Tiling) -> (usize, bool) {
    let threads = crate::par::num_threads();
    (t.blocks, t.blocks >= threads && threads > 1)
}

/// y = conv(x, w) [+ bias], x (N, Cin, H, W), w (Cout, Cin, 3, 3), bias
/// (Cout), y (N, Cout, Ho, Wo). The bias is added while writing y.
pub fn conv_fwd(g: &Geo, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let t = Tiling::new(g);
    let u = transform_filters(g, w);
    let (xsz, ysz) = (g.cin * g.xs[1] * g.xs[2], g.cout * g.ys[1] * g.ys[2]);
    let (items, outer) = schedule(&t);
    let threads = if outer { 1 } else { crate::par::num_threads() };
    let yp = SendPtr(y.as_mut_ptr());
    let one = |b: usize, s: &mut Scratch| {
        let (nt, segs) = t.segments(b, g.n);
        for sg in &segs {
            transform_input(g, &t, &x[sg.img * xsz..][..xsz], *sg, s);
        }
        for xi in 0..16 {
            // SAFETY: u holds 16 x Cin x Cout, v 16 x Cin x nt (>= used), m
            // 16 x Cout x nt; distinct buffers.
            unsafe {
                gemm32(
                    (g.cout, nt, g.cin),
                    s.m.as_mut_ptr().add(xi * g.cout * nt),
                    nt as isize,
                    false,
                    u.as_ptr().add(xi * g.cout * g.cin),
                    (1, g.cout as isize),
                    s.v.as_ptr().add(xi * g.cin * nt),
                    (nt as isize, 1),
                    threads,
                )
            };
        }
        for sg in &segs {
            // SAFETY: image sg.img's output; blocks write disjoint rows of it.
            let yi = unsafe { std::slice::from_raw_parts_mut(yp.get().add(sg.img * ysz), ysz) };
            transform_output(g, &t, *sg, s, bias, yi);
        }
    };
    let init = || Scratch::new(g, &t);
    if outer {
        par_for_init(items, init, one);
    } else {
        let mut s = init();
        (0..items).for_each(|it| one(it, &mut s));
    }
}

/// dw = the filter gradient of conv(x, w) for output gradient dy.
pub fn conv_bwd_weight(g: &Geo, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    let t = Tiling::new(g);
    let (xsz, ysz) = (g.cin * g.xs[1] * g.xs[2], g.cout * g.ys[1] * g.ys[2]);
    let (items, outer) = schedule(&t);
    let usz = 16 * g.cout * g.cin;
    let one = |b: usize, s: &mut Scratch, du: &mut [f32], threads: usize| {
        let (nt, segs) = t.segments(b, g.n);
        for sg in &segs {
            transform_input(g, &t, &x[sg.img * xsz..][..xsz], *sg, s);
            transform_grad(g, &t, &dy[sg.img * ysz..][..ysz], *sg, s);
        }
        for xi in 0..16 {
            // dU[xi] (Cout x Cin) += dYhat[xi] (Cout x nt) . V[xi]^T (nt x Cin)
            // SAFETY: as in conv_fwd; du holds 16 x Cout x Cin.
            unsafe {
                gemm32(
                    (g.cout, g.cin, nt),
                    du.as_mut_ptr().add(xi * g.cout * g.cin),
                    g.cin as isize,
                    true,
                    s.m.as_ptr().add(xi * g.cout * nt),
                    (nt as isize, 1),
                    s.v.as_ptr().add(xi * g.cin * nt),
                    (1, nt as isize),
                    threads,
                )
            };
        }
    };
    let du = if outer {
        let chunks = crate::par::num_threads().min(items);
        let per = items.div_ceil(chunks);
        let parts = par_map(chunks, |c| {
            let mut du = vec![0.0f32; usz];
            let mut s = Scratch::new(g, &t);
            for it in c * per..((c + 1) * per).min(items) {
                one(it, &mut s, &mut du, 1);
            }
            du
        });
        let mut parts = parts.into_iter();
        let mut du = parts.next().unwrap_or_else(|| vec![0.0; usz]);
        for p in parts {
            for (d, v) in du.iter_mut().zip(p) {
                *d += v;
            }
        }
        du
    } else {
        let mut du = vec![0.0f32; usz];
        let mut s = Scratch::new(g, &t);
        for it in 0..items {
            one(it, &mut s, &mut du, crate::par::num_threads());
        }
        du
    };
    // dw = G^T dU G per (co, ci), in parallel
    let cc = g.cout * g.cin;
    const PER_TASK: usize = 1024; // (co, ci) pairs
    crate::par::par_chunks_mut(&mut dw[..cc * 9], 9 * PER_TASK, |c, part| {
        for (k, out) in part.chunks_exact_mut(9).enumerate() {
            let idx = c * PER_TASK + k;
            let d = |i: usize, j: usize| du[(i * 4 + j) * cc + idx];
            // G^T X G, where G^T maps (a, b, c, e) to (a + (b+c)/2, (b-c)/2, (b+c)/2 + e)
            let gt = |a: f32, b: f32, c: f32, e: f32| {
                [a + 0.5 * (b + c), 0.5 * (b - c), 0.5 * (b + c) + e]
            };
            let cols: [[f32; 3]; 4] =
                std::array::from_fn(|j| gt(d(0, j), d(1, j), d(2, j), d(3, j)));
            for (i, o) in out.chunks_exact_mut(3).enumerate() {
                o.copy_from_slice(&gt(cols[0][i], cols[1][i], cols[2][i], cols[3][i]));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::conv;

    fn geo(n: usize, cin: usize, cout: usize, h: usize, w: usize, p: [usize; 2]) -> Geo {
        let (ho, wo) = (h + 2 * p[0] - 2, w + 2 * p[1] - 2);
        Geo {
            n,
            cin,
            cout,
            g: 1,
            xs: [1, h, w],
            ys: [1, ho, wo],
            k: [1, 3, 3],
            s: [1; 3],
            d: [1; 3],
            p: [0, p[0], p[1]],
        }
    }

    fn rand(n: usize, seed: u64) -> Vec<f32> {
        let mut r = crate::random::Rng::seeded(seed);
        (0..n).map(|_| r.uniform() as f32 * 2.0 - 1.0).collect()
    }

    /// Direct float64 convolution: (y, dx, dw) for output gradient dy.
    fn reference(g: &Geo, x: &[f32], w: &[f32], dy: &[f32]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (h, wd, ho, wo) = (g.xs[1], g.xs[2], g.ys[1], g.ys[2]);
        let mut y = vec![0.0; g.n * g.cout * ho * wo];
        let mut dx = vec![0.0; x.len()];
        let mut dw = vec![0.0; w.len()];
        for i in 0..g.n {
            for co in 0..g.cout {
                for oy in 0..ho {
                    for ox in 0..wo {
                        let yi = ((i * g.cout + co) * ho + oy) * wo + ox;
                        for ci in 0..g.cin {
                            for ky in 0..3 {
                                for kx in 0..3 {
                                    let (iy, ix) = (
                                        (oy + ky) as isize - g.p[1] as isize,
                                        (ox + kx) as isize - g.p[2] as isize,
                                    );
                                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                        continue;
                                    }
                                    let xi =
                                        ((i * g.cin + ci) * h + iy as usize) * wd + ix as usize;
                                    let wi = ((co * g.cin + ci) * 3 + ky) * 3 + kx;
                                    y[yi] += x[xi] as f64 * w[wi] as f64;
                                    dx[xi] += dy[yi] as f64 * w[wi] as f64;
                                    dw[wi] += dy[yi] as f64 * x[xi] as f64;
                                }
                            }
                        }
                    }
                }
            }
        }
        (y, dx, dw)
    }

    fn close(what: &str, got: &[f32], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (k, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                ((*a as f64) - b).abs() <= 1e-5 * scale,
                "{what}[{k}]: {a} vs {b} (scale {scale})"
            );
        }
    }

    #[test]
    fn matches_direct_convolution() {
        // odd and even sizes, pads 0..2, a block boundary inside one image
        // (w = 7: 4 tiles a row, 32 rows a block) and blocks across images.
        for &(n, cin, cout, h, w, p) in &[
            (1, 16, 16, 4, 4, [1, 1]),
            (2, 16, 17, 7, 5, [1, 1]),
            (3, 17, 16, 9, 8, [0, 0]),
            (1, 16, 20, 40, 7, [2, 1]),
            (2, 20, 16, 6, 11, [0, 2]),
            (1, 16, 16, 3, 3, [1, 0]),
            // 17 tiles a row: blocks of 7 tile rows cut 3 images of 5 rows
            // in the middle, one block spans the end of one and the start
            // of the next
            (3, 16, 16, 10, 34, [1, 1]),
            // enough channels for the data gradient to dispatch here
            (2, 64, 65, 7, 5, [1, 1]),
            (1, 70, 64, 6, 9, [2, 0]),
        ] {
            let g = geo(n, cin, cout, h, w, p);
            assert!(applicable(&g), "{n} {cin} {cout} {h} {w} {p:?}");
            let x = rand(n * cin * h * w, 1);
            let wt = rand(cout * cin * 9, 2);
            let ysz = n * cout * g.ys[1] * g.ys[2];
            let dy = rand(ysz, 3);
            let (ry, rdx, rdw) = reference(&g, &x, &wt, &dy);
            let mut y = vec![f32::NAN; ysz];
            conv_fwd(&g, &x, &wt, None, &mut y);
            close("y", &y, &ry);
            let bias = rand(cout, 4);
            conv_fwd(&g, &x, &wt, Some(&bias), &mut y);
            let plane = g.ys[1] * g.ys[2];
            let ryb: Vec<f64> = ry
                .iter()
                .enumerate()
                .map(|(k, v)| v + bias[(k / plane) % cout] as f64)
                .collect();
            close("y + bias", &y, &ryb);
            let mut dw = vec![f32::NAN; wt.len()];
            conv_bwd_weight(&g, &x, &dy, &mut dw);
            close("dw", &dw, &rdw);
            // the data gradient dispatches to this module's forward
            if eligible::<f32>(&g) {
                let mut dx = vec![f32::NAN; x.len()];
                conv::conv_bwd_data(&g, &dy, &wt, &mut dx);
                close("dx", &dx, &rdx);
            }
        }
    }

    #[test]
    fn too_few_channels_or_other_geometry_are_not_eligible() {
        assert!(eligible::<f32>(&geo(1, 64, 64, 8, 8, [1, 1])));
        assert!(!eligible::<f32>(&geo(1, 32, 64, 8, 8, [1, 1])));
        assert!(!eligible::<f64>(&geo(1, 64, 64, 8, 8, [1, 1])));
        let mut g = geo(1, 64, 64, 8, 8, [1, 1]);
        g.s = [1, 2, 2];
        assert!(!eligible::<f32>(&g));
    }
}
