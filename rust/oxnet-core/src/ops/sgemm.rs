//! Single-precision GEMM for x86-64 with AVX2 + FMA (Goto/BLIS blocking,
//! 6x16 register tile). Its right-hand side can be gathered through row or
//! column offset tables while it is packed, which lets the stride-1 float32
//! convolutions (forward, data and weight gradients; Deconvolution) run as
//! one GEMM of depth Cin*k per image with no im2col buffer. Other products
//! use the `gemm` crate.
//!
//! `C (m x n) = [C +] A (m x k) . B (k x n)`, every matrix strided by
//! (row stride, column stride) in elements. Loop nest (outer to inner):
//! NC columns of B -> depth blocks (<= KC_MAX) -> pack B panel (L3) -> MC rows of
//! A -> pack A block (MC x depth block, L2) -> NR columns -> MR rows -> micro-kernel
//! (the B micro-panel KC x NR stays in L1). Packed panels are zero-padded
//! so the kernel always computes full tiles; edge tiles go through a small
//! buffer and only their valid part is written.
//!
//! Machines with AVX-512 keep the `gemm` crate (it has AVX-512 kernels);
//! [`available`] says whether this kernel is used on the running CPU.

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::x86_64::*;
    use std::cell::RefCell;

    pub const MR: usize = 6;
    pub const NR: usize = 16;
    /// Depth blocks hold at most this many; a depth of 576 runs as 2 x 288.
    /// (Depth blocks of up to 1024, with B's micro-panel streaming from L2,
    /// ran 2% faster on one thread but slower with two products at once:
    /// they stream 2.4x more of B's packed panel from the shared L3.)
    const KC_MAX: usize = 320;
    const MC: usize = 120;
    const NC: usize = 1024;

    /// Depth block size: `k` in equal blocks of at most KC_MAX.
    fn kc_for(k: usize) -> usize {
        k.div_ceil(k.div_ceil(KC_MAX).max(1))
    }

    thread_local! {
        static PACK: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }

    #[derive(Clone, Copy)]
    pub struct Mat {
        pub ptr: *const f32,
        pub rs: isize,
        pub cs: isize,
    }

    #[derive(Clone, Copy)]
    pub struct MatMut {
        pub ptr: *mut f32,
        pub rs: isize,
        pub cs: isize,
    }
    unsafe impl Send for Mat {}
    unsafe impl Sync for Mat {}
    unsafe impl Send for MatMut {}
    unsafe impl Sync for MatMut {}

    /// Where element (p, j) of B (depth p, column j) lives.
    #[derive(Clone, Copy)]
    pub enum BSrc<'a> {
        /// `ptr[p * rs + j * cs]`
        Strided(Mat),
        /// `ptr[rows[p] + j]`: rows gathered from anywhere (implicit im2col)
        Rows(*const f32, &'a [isize]),
        /// `ptr[cols[j] + p]`: columns gathered from anywhere
        Cols(*const f32, &'a [isize]),
    }
    unsafe impl Send for BSrc<'_> {}
    unsafe impl Sync for BSrc<'_> {}

    impl<'a> BSrc<'a> {
        /// The same source with its columns starting at `j0`.
        /// # Safety
        /// `j0` must not exceed the number of columns.
        pub unsafe fn skip_cols(self, j0: usize) -> BSrc<'a> {
            match self {
                BSrc::Strided(m) => BSrc::Strided(Mat {
                    ptr: m.ptr.offset(j0 as isize * m.cs),
                    ..m
                }),
                BSrc::Rows(p, rows) => BSrc::Rows(p.add(j0), rows),
                BSrc::Cols(p, cols) => BSrc::Cols(p, &cols[j0..]),
            }
        }
    }

    /// Pack rows [i0, i0+mc) x depth [p0, p0+kc) of A into MR-row panels:
    /// panel r holds, for each depth p, MR consecutive values (zero-padded).
    unsafe fn pack_a(dst: &mut [f32], a: Mat, i0: usize, mc: usize, p0: usize, kc: usize) {
        let panels = mc.div_ceil(MR);
        for r in 0..panels {
            let rows = MR.min(mc - r * MR);
            let out = &mut dst[r * MR * kc..(r + 1) * MR * kc];
            let base = a
                .ptr
                .offset((i0 + r * MR) as isize * a.rs + p0 as isize * a.cs);
            if a.rs == 1 && rows == MR {
                // column-major A: each depth's MR values are contiguous
                for p in 0..kc {
                    let src = base.offset(p as isize * a.cs);
                    std::ptr::copy_nonoverlapping(src, out.as_mut_ptr().add(p * MR), MR);
                }
            } else if a.cs == 1 && rows == MR {
                // row-major A: the MR rows side by side, transposed in registers
                let rp: [*const f32; MR] = std::array::from_fn(|i| base.offset(i as isize * a.rs));
                // the next panel's rows, fetched while this one is packed
                // (each row is only kc values: too short a stream for the
                // hardware prefetcher); the last panel fetches its own
                let ahead = if r + 1 < panels {
                    MR as isize * a.rs
                } else {
                    0
                };
                pack_a_rows(out, &rp, ahead, kc);
            } else {
                for i in 0..MR {
                    if i < rows {
                        let row = base.offset(i as isize * a.rs);
                        for p in 0..kc {
                            *out.get_unchecked_mut(p * MR + i) = *row.offset(p as isize * a.cs);
                        }
                    } else {
                        for p in 0..kc {
                            *out.get_unchecked_mut(p * MR + i) = 0.0;
                        }
                    }
                }
            }
        }
    }

    /// One full A panel from MR rows, each contiguous in depth: 8 depths of
    /// every row at a time, transposed in registers (two zero rows pad the
    /// 8x8 block); depth p's MR values go to `out[p * MR..]`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn pack_a_rows(out: &mut [f32], rp: &[*const f32; MR], ahead: isize, kc: usize) {
        debug_assert!(out.len() >= kc * MR);
        let o = out.as_mut_ptr();
        let z = _mm256_setzero_ps();
        let mut p = 0;
        while p + 8 <= kc {
            if p % 16 == 0 {
                for r in rp {
                    _mm_prefetch::<_MM_HINT_T0>(r.offset(ahead).add(p) as *const i8);
                }
            }
            let t = transpose8([
                _mm256_loadu_ps(rp[0].add(p)),
                _mm256_loadu_ps(rp[1].add(p)),
                _mm256_loadu_ps(rp[2].add(p)),
                _mm256_loadu_ps(rp[3].add(p)),
                _mm256_loadu_ps(rp[4].add(p)),
                _mm256_loadu_ps(rp[5].add(p)),
                z,
                z,
            ]);
            // each 8-wide store spills two padding lanes into the next
            // depth's slot, which the following store overwrites; the last
            // one writes exactly MR values
            for (q, v) in t.iter().enumerate().take(7) {
                _mm256_storeu_ps(o.add((p + q) * MR), *v);
            }
            let d = o.add((p + 7) * MR);
            _mm_storeu_ps(d, _mm256_castps256_ps128(t[7]));
            _mm_storel_epi64(
                d.add(4) as *mut __m128i,
                _mm_castps_si128(_mm256_extractf128_ps::<1>(t[7])),
            );
            p += 8;
        }
        for p in p..kc {
            for (i, r) in rp.iter().enumerate() {
                *o.add(p * MR + i) = *r.add(p);
            }
        }
    }

    /// Pack depth [p0, p0+kc) x columns [j0, j0+nc) of B into NR-column
    /// panels: panel c holds, for each depth p, NR consecutive values.
    unsafe fn pack_b(dst: &mut [f32], b: BSrc, p0: usize, kc: usize, j0: usize, nc: usize) {
        match b {
            // rows contiguous in j: read each row once, left to right, into
            // every panel (reading a panel's 16 columns row by row instead
            // touches a new row - often a new page - every 64 bytes)
            BSrc::Strided(m) if m.cs == 1 => {
                let base = m.ptr.offset(p0 as isize * m.rs + j0 as isize);
                pack_b_by_rows(dst, |p| base.offset(p as isize * m.rs), kc, nc);
            }
            BSrc::Rows(ptr, rows) => {
                let base = ptr.add(j0);
                pack_b_by_rows(dst, |p| base.offset(rows[p0 + p]), kc, nc);
            }
            _ => pack_b_panels(dst, b, p0, kc, j0, nc),
        }
    }

    /// [`pack_b`] from rows of `nc` contiguous values (row p at `row(p)`),
    /// one row at a time across all panels.
    #[inline(always)]
    unsafe fn pack_b_by_rows(
        dst: &mut [f32],
        row: impl Fn(usize) -> *const f32,
        kc: usize,
        nc: usize,
    ) {
        let o = dst.as_mut_ptr();
        let full = nc / NR;
        let tail = nc - full * NR;
        // PB rows at a time: each panel then receives PB * NR contiguous
        // values per visit (one row at a time wrote 64 bytes to each of
        // nc / NR places kc * 64 bytes apart, a new page for each)
        const PB: usize = 8;
        let mut p = 0;
        while p < kc {
            let pb = PB.min(kc - p);
            let src: [*const f32; PB] = std::array::from_fn(|q| row(p + q.min(pb - 1)));
            for c in 0..full {
                let d = o.add(c * NR * kc + p * NR);
                for (q, s) in src[..pb].iter().enumerate() {
                    std::ptr::copy_nonoverlapping(s.add(c * NR), d.add(q * NR), NR);
                }
            }
            p += pb;
        }
        if tail > 0 {
            for p in 0..kc {
                let d = o.add(full * NR * kc + p * NR);
                std::ptr::copy_nonoverlapping(row(p).add(full * NR), d, tail);
                std::ptr::write_bytes(d.add(tail), 0, NR - tail);
            }
        }
    }

    /// [`pack_b`] panel by panel (column-major and gathered sources).
    unsafe fn pack_b_panels(dst: &mut [f32], b: BSrc, p0: usize, kc: usize, j0: usize, nc: usize) {
        let panels = nc.div_ceil(NR);
        for c in 0..panels {
            let jc = j0 + c * NR;
            let cols = NR.min(nc - c * NR);
            let out = &mut dst[c * NR * kc..(c + 1) * NR * kc];
            match b {
                BSrc::Strided(b) => {
                    let base = b.ptr.offset(p0 as isize * b.rs + jc as isize * b.cs);
                    if b.rs == 1 && cols == NR {
                        let colp: [*const f32; NR] =
                            std::array::from_fn(|j| base.offset(j as isize * b.cs));
                        pack_b_columns(out, &colp, kc);
                    } else {
                        for j in 0..NR {
                            for p in 0..kc {
                                *out.get_unchecked_mut(p * NR + j) = if j < cols {
                                    *base.offset(p as isize * b.rs + j as isize * b.cs)
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
                BSrc::Rows(..) => unreachable!("row sources pack through pack_b_by_rows"),
                BSrc::Cols(ptr, colsoff) => {
                    if cols == NR {
                        let colp: [*const f32; NR] =
                            std::array::from_fn(|j| ptr.offset(colsoff[jc + j]).add(p0));
                        pack_b_columns(out, &colp, kc);
                    } else {
                        for j in 0..NR {
                            for p in 0..kc {
                                *out.get_unchecked_mut(p * NR + j) = if j < cols {
                                    *ptr.offset(colsoff[jc + j]).add(p0 + p)
                                } else {
                                    0.0
                                };
                            }
                        }
                    }
                }
            }
        }
    }

    /// One full B panel from NR columns, each contiguous in depth: 8x8
    /// blocks transposed in registers.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn pack_b_columns(out: &mut [f32], colp: &[*const f32; NR], kc: usize) {
        let o = out.as_mut_ptr();
        let mut p = 0;
        while p + 8 <= kc {
            for h in 0..2 {
                let col = |j: usize| colp[h * 8 + j].add(p);
                let t = transpose8([
                    _mm256_loadu_ps(col(0)),
                    _mm256_loadu_ps(col(1)),
                    _mm256_loadu_ps(col(2)),
                    _mm256_loadu_ps(col(3)),
                    _mm256_loadu_ps(col(4)),
                    _mm256_loadu_ps(col(5)),
                    _mm256_loadu_ps(col(6)),
                    _mm256_loadu_ps(col(7)),
                ]);
                for (q, v) in t.iter().enumerate() {
                    _mm256_storeu_ps(o.add((p + q) * NR + h * 8), *v);
                }
            }
            p += 8;
        }
        for p in p..kc {
            for (j, c) in colp.iter().enumerate() {
                *o.add(p * NR + j) = *c.add(p);
            }
        }
    }

    /// Rows of an 8x8 block in, its columns out.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ]
    }

    /// The 6x16 micro-kernel: `tile = pa (MR x kc) . pb (kc x NR)`, then
    /// `C[..rows, ..cols] = (beta ? C : 0) + tile`.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn kernel(
        kc: usize,
        pa: *const f32,
        pb: *const f32,
        c: MatMut,
        rows: usize,
        cols: usize,
        beta: bool,
    ) {
        // The C tile's rows lie a full row stride apart (often a multiple
        // of 4 KiB: the same cache sets); fetch them while the depth loop runs.
        if c.cs == 1 {
            for i in 0..rows {
                let row = c.ptr.offset(i as isize * c.rs) as *const i8;
                _mm_prefetch::<_MM_HINT_T0>(row);
                _mm_prefetch::<_MM_HINT_T0>(row.add(NR * 4 - 4));
            }
        }
        let mut c00 = _mm256_setzero_ps();
        let mut c01 = _mm256_setzero_ps();
        let mut c10 = _mm256_setzero_ps();
        let mut c11 = _mm256_setzero_ps();
        let mut c20 = _mm256_setzero_ps();
        let mut c21 = _mm256_setzero_ps();
        let mut c30 = _mm256_setzero_ps();
        let mut c31 = _mm256_setzero_ps();
        let mut c40 = _mm256_setzero_ps();
        let mut c41 = _mm256_setzero_ps();
        let mut c50 = _mm256_setzero_ps();
        let mut c51 = _mm256_setzero_ps();
        let mut a = pa;
        let mut b = pb;
        for _ in 0..kc {
            let b0 = _mm256_loadu_ps(b);
            let b1 = _mm256_loadu_ps(b.add(8));
            let x = _mm256_broadcast_ss(&*a);
            c00 = _mm256_fmadd_ps(x, b0, c00);
            c01 = _mm256_fmadd_ps(x, b1, c01);
            let x = _mm256_broadcast_ss(&*a.add(1));
            c10 = _mm256_fmadd_ps(x, b0, c10);
            c11 = _mm256_fmadd_ps(x, b1, c11);
            let x = _mm256_broadcast_ss(&*a.add(2));
            c20 = _mm256_fmadd_ps(x, b0, c20);
            c21 = _mm256_fmadd_ps(x, b1, c21);
            let x = _mm256_broadcast_ss(&*a.add(3));
            c30 = _mm256_fmadd_ps(x, b0, c30);
            c31 = _mm256_fmadd_ps(x, b1, c31);
            let x = _mm256_broadcast_ss(&*a.add(4));
            c40 = _mm256_fmadd_ps(x, b0, c40);
            c41 = _mm256_fmadd_ps(x, b1, c41);
            let x = _mm256_broadcast_ss(&*a.add(5));
            c50 = _mm256_fmadd_ps(x, b0, c50);
            c51 = _mm256_fmadd_ps(x, b1, c51);
            a = a.add(MR);
            b = b.add(NR);
        }
        let acc = [c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51];
        if rows == MR && cols == NR && c.cs == 1 {
            for i in 0..MR {
                let row = c.ptr.offset(i as isize * c.rs);
                let (mut v0, mut v1) = (acc[2 * i], acc[2 * i + 1]);
                if beta {
                    v0 = _mm256_add_ps(v0, _mm256_loadu_ps(row));
                    v1 = _mm256_add_ps(v1, _mm256_loadu_ps(row.add(8)));
                }
                _mm256_storeu_ps(row, v0);
                _mm256_storeu_ps(row.add(8), v1);
            }
        } else {
            let mut tile = [0f32; MR * NR];
            for (i, v) in acc.iter().enumerate() {
                _mm256_storeu_ps(tile.as_mut_ptr().add(i * 8), *v);
            }
            for i in 0..rows {
                for j in 0..cols {
                    let p = c.ptr.offset(i as isize * c.rs + j as isize * c.cs);
                    let t = tile[i * NR + j];
                    *p = if beta { *p + t } else { t };
                }
            }
        }
    }

    /// Packed panels start on 64-byte boundaries: a B row of the micro-panel
    /// (16 floats) is then one cache line and its two 32-byte loads never
    /// straddle lines. Buffers get this much slack for the shift.
    const SLACK: usize = 16;

    /// `buf` grown to `need` (+ slack) and cut to start on 64 bytes.
    fn aligned(buf: &mut Vec<f32>, need: usize) -> &mut [f32] {
        if buf.len() < need + SLACK {
            buf.resize(need + SLACK, 0.0);
        }
        let off = buf.as_ptr().align_offset(64).min(SLACK);
        &mut buf[off..]
    }

    /// One depth block [pc, pc + kc) of `C (m x nc) [+]= A . B` against
    /// packed B panels at `pb` (panel q of NR columns at `pb + q * NR * kc`):
    /// A packed MC rows at a time into `pa`, then the micro-kernel over
    /// every tile. `c` points at the block's first column.
    #[allow(clippy::too_many_arguments)]
    unsafe fn macro_block(
        pa: &mut [f32],
        a: Mat,
        m: usize,
        (pc, kc): (usize, usize),
        pb: *const f32,
        nc: usize,
        c: MatMut,
        beta: bool,
    ) {
        let mut ic = 0;
        while ic < m {
            let mc = MC.min(m - ic);
            pack_a(pa, a, ic, mc, pc, kc);
            let mut jr = 0;
            while jr < nc {
                let cols = NR.min(nc - jr);
                let bp = pb.add(jr * kc);
                let mut ir = 0;
                while ir < mc {
                    let rows = MR.min(mc - ir);
                    let ct = MatMut {
                        ptr: c.ptr.offset((ic + ir) as isize * c.rs + jr as isize * c.cs),
                        ..c
                    };
                    kernel(kc, pa.as_ptr().add(ir * kc), bp, ct, rows, cols, beta);
                    ir += MR;
                }
                jr += NR;
            }
            ic += MC;
        }
    }

    /// The blocked product on one thread.
    pub unsafe fn run(m: usize, n: usize, k: usize, c: MatMut, acc: bool, a: Mat, b: BSrc) {
        PACK.with(|cell| {
            let mut bufs = cell.borrow_mut();
            let (pa, pb) = &mut *bufs;
            let kcb = kc_for(k);
            let pa = aligned(pa, MC.min(m).div_ceil(MR) * MR * kcb);
            let pb = aligned(pb, NC.min(n).div_ceil(NR) * NR * kcb);
            let mut jc = 0;
            while jc < n {
                let nc = NC.min(n - jc);
                let mut pc = 0;
                while pc < k {
                    let kc = kcb.min(k - pc);
                    let beta = acc || pc > 0;
                    pack_b(pb, b, pc, kc, jc, nc);
                    let cj = MatMut {
                        ptr: c.ptr.offset(jc as isize * c.cs),
                        ..c
                    };
                    macro_block(pa, a, m, (pc, kc), pb.as_ptr(), nc, cj, beta);
                    pc += kcb;
                }
                jc += NC;
            }
        })
    }

    /// A right-hand side packed once for many products (the recurrent
    /// weight of an RNN, multiplied at every time step): depth block `q`
    /// holds what [`pack_b`] writes for depths [q*kcb, q*kcb+kc) and all
    /// `n` columns, at `q * kcb * npad`.
    pub struct PackedB {
        buf: Vec<f32>,
        off: usize,
        pub k: usize,
        pub n: usize,
        kcb: usize,
    }

    impl PackedB {
        /// Pack B (k x n), element (p, j) at `b[p * rs + j * cs]`.
        /// # Safety
        /// `b` must cover the described matrix.
        pub unsafe fn new(k: usize, n: usize, b: *const f32, rs: isize, cs: isize) -> PackedB {
            let kcb = kc_for(k).max(1);
            let npad = n.div_ceil(NR) * NR;
            let mut buf = Vec::new();
            let off = {
                let dst = aligned(&mut buf, k.div_ceil(kcb) * kcb * npad);
                dst.as_ptr().offset_from(buf.as_ptr()) as usize
            };
            let src = BSrc::Strided(Mat { ptr: b, rs, cs });
            let mut pc = 0;
            while pc < k {
                let kc = kcb.min(k - pc);
                let at = off + pc * npad;
                pack_b(&mut buf[at..at + kc * npad], src, pc, kc, 0, n);
                pc += kcb;
            }
            PackedB {
                buf,
                off,
                k,
                n,
                kcb,
            }
        }

        /// `C[:, j0..j0+nc] = [C +] A . B[:, j0..j0+nc]` on this thread; `j0`
        /// is a multiple of NR.
        /// # Safety
        /// `a` (m x k) and `c` (m x n) must cover their matrices.
        pub unsafe fn run_cols(
            &self,
            m: usize,
            c: MatMut,
            acc: bool,
            a: Mat,
            j0: usize,
            nc: usize,
        ) {
            debug_assert!(j0.is_multiple_of(NR));
            let npad = self.n.div_ceil(NR) * NR;
            PACK.with(|cell| {
                let mut bufs = cell.borrow_mut();
                let pa = aligned(&mut bufs.0, MC.min(m).div_ceil(MR) * MR * self.kcb);
                let mut pc = 0;
                while pc < self.k {
                    let kc = self.kcb.min(self.k - pc);
                    let beta = acc || pc > 0;
                    let block = self.buf.as_ptr().add(self.off + pc * npad);
                    let cj = MatMut {
                        ptr: c.ptr.offset(j0 as isize * c.cs),
                        ..c
                    };
                    macro_block(pa, a, m, (pc, kc), block.add(j0 * kc), nc, cj, beta);
                    pc += self.kcb;
                }
            })
        }
    }

    /// AVX2 and FMA present (and `OXNET_SGEMM_DISABLE` unset): the kernel
    /// can run, whatever [`available`] prefers for one-off products.
    pub fn has_avx2_fma() -> bool {
        use std::sync::OnceLock;
        static OK: OnceLock<bool> = OnceLock::new();
        *OK.get_or_init(|| {
            std::env::var_os("OXNET_SGEMM_DISABLE").is_none()
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
        })
    }

    pub fn available() -> bool {
        use std::sync::OnceLock;
        static OK: OnceLock<bool> = OnceLock::new();
        *OK.get_or_init(|| {
            std::env::var_os("OXNET_SGEMM_DISABLE").is_none()
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && !is_x86_feature_detected!("avx512f")
        })
    }
}

/// Whether [`sgemm`] runs on this CPU (AVX2 + FMA without AVX-512, and
/// `OXNET_SGEMM_DISABLE` unset); otherwise callers use the `gemm` crate.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        imp::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether products in element type `T` run on [`sgemm`]: float32 on a
/// CPU where it is [`available`].
pub fn runs_for<T: 'static>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() && available()
}

#[cfg(target_arch = "x86_64")]
pub use imp::{BSrc, Mat, PackedB};

/// Whether [`PackedB`] / [`sgemm_packed`] can run here (AVX2 + FMA, with or
/// without AVX-512; `OXNET_SGEMM_DISABLE` unset).
pub fn packed_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        imp::has_avx2_fma()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `C (m x n) = [C +] A (m x k) . B` with B packed once in a [`PackedB`]
/// (k x n), C row-major with row stride `crs`, A strided (ars, acs); the
/// columns are split over up to `threads` rayon tasks in whole panels.
/// Requires [`packed_available`].
/// # Safety
/// The pointers must cover the described matrices; C must not alias A.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_packed(
    m: usize,
    c: *mut f32,
    crs: isize,
    acc: bool,
    a: *const f32,
    ars: isize,
    acs: isize,
    b: &PackedB,
    threads: usize,
) {
    use imp::{MatMut, NR};
    debug_assert!(packed_available());
    let n = b.n;
    if m == 0 || n == 0 {
        return;
    }
    if b.k == 0 {
        if !acc {
            crate::ops::kernels::zero_strided(m, n, c, crs, 1, 0.0);
        }
        return;
    }
    let cm = MatMut {
        ptr: c,
        rs: crs,
        cs: 1,
    };
    let am = Mat {
        ptr: a,
        rs: ars,
        cs: acs,
    };
    let panels = n.div_ceil(NR);
    let parts = threads.max(1).min(panels);
    if parts <= 1 {
        b.run_cols(m, cm, acc, am, 0, n);
        return;
    }
    let per = panels.div_ceil(parts) * NR;
    struct Args(MatMut, Mat);
    // SAFETY: the parts write disjoint columns of C and only read A and B.
    unsafe impl Sync for Args {}
    let args = Args(cm, am);
    crate::par::par_for(n.div_ceil(per), &|i| {
        let Args(cm, am) = &args;
        let j0 = i * per;
        b.run_cols(m, *cm, acc, *am, j0, per.min(n - j0));
    });
}

/// `C (m x n) = [C +] A (m x k) . B (k x n)` in f32, strides (row, col) in
/// elements, split over up to `threads` rayon tasks (by columns of C when
/// it is wide, else by rows). Requires [`available`].
/// # Safety
/// The pointers must cover the described matrices; C must not alias A or B.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    c: *mut f32,
    crs: isize,
    ccs: isize,
    acc: bool,
    a: *const f32,
    ars: isize,
    acs: isize,
    b: *const f32,
    brs: isize,
    bcs: isize,
    threads: usize,
) {
    let b = BSrc::Strided(Mat {
        ptr: b,
        rs: brs,
        cs: bcs,
    });
    sgemm_b(m, n, k, c, crs, ccs, acc, a, ars, acs, b, threads)
}

/// [`sgemm`] with B given by a [`BSrc`] (rows or columns gathered through
/// offset tables: convolution without an im2col buffer).
/// # Safety
/// As for [`sgemm`]; every offset must address a valid element.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm_b(
    m: usize,
    n: usize,
    k: usize,
    c: *mut f32,
    crs: isize,
    ccs: isize,
    acc: bool,
    a: *const f32,
    ars: isize,
    acs: isize,
    b: BSrc,
    threads: usize,
) {
    use imp::{MatMut, MR, NR};
    debug_assert!(packed_available());
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !acc {
            crate::ops::kernels::zero_strided(m, n, c, crs, ccs, 0.0);
        }
        return;
    }
    let cm = MatMut {
        ptr: c,
        rs: crs,
        cs: ccs,
    };
    let am = Mat {
        ptr: a,
        rs: ars,
        cs: acs,
    };
    // split the wider side in whole tiles
    let (by_cols, unit, len) = if n.div_ceil(NR) >= m.div_ceil(MR) {
        (true, NR, n)
    } else {
        (false, MR, m)
    };
    let tiles = len.div_ceil(unit);
    let parts = threads.max(1).min(tiles);
    if parts <= 1 {
        imp::run(m, n, k, cm, acc, am, b);
        return;
    }
    let per = tiles.div_ceil(parts) * unit;
    // on the kernel pool (never rayon's global one: see crate::par)
    crate::par::install(|| {
        rayon::scope(|s| {
            let mut start = 0;
            while start < len {
                let cnt = per.min(len - start);
                let s0 = start;
                s.spawn(move |_| {
                    // whole-struct captures (the structs are Send, their fields are not)
                    let (cm, am, b) = (cm, am, b);
                    if by_cols {
                        let cp = MatMut {
                            ptr: cm.ptr.offset(s0 as isize * cm.cs),
                            ..cm
                        };
                        imp::run(m, cnt, k, cp, acc, am, b.skip_cols(s0));
                    } else {
                        let cp = MatMut {
                            ptr: cm.ptr.offset(s0 as isize * cm.rs),
                            ..cm
                        };
                        let ap = Mat {
                            ptr: am.ptr.offset(s0 as isize * am.rs),
                            ..am
                        };
                        imp::run(cnt, n, k, cp, acc, ap, b);
                    }
                });
                start += cnt;
            }
        })
    });
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn naive(
        m: usize,
        n: usize,
        k: usize,
        a: impl Fn(usize, usize) -> f32,
        b: impl Fn(usize, usize) -> f32,
    ) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a(i, p) as f64 * b(p, j) as f64).sum();
            }
        }
        c
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (*g as f64 - w).abs() < 1e-4 * (1.0 + w.abs()),
                "{what}: [{i}] {g} vs {w}"
            );
        }
    }

    #[test]
    fn products_match_naive_for_every_layout_and_source() {
        // the kernel runs wherever AVX2 and FMA do (`available` only says
        // whether one-off products prefer it to the gemm crate)
        if !packed_available() {
            eprintln!("sgemm: not available on this CPU, skipped");
            return;
        }
        let shapes = [
            (1, 1, 1),
            (7, 19, 5),
            (13, 33, 300),
            (100, 70, 700),
            (6, 16, 320),
            (40, 50, 641),
            // several column blocks (NC) and several depth blocks (KC_MAX)
            (9, 1100, 40),
            (14, 40, 1500),
        ];
        for &(m, n, k) in &shapes {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0)
                .collect();
            for threads in [1, 3] {
                for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                    let (ars, acs) = if ta { (1, m) } else { (k, 1) };
                    let (brs, bcs) = if tb { (1, k) } else { (n, 1) };
                    let want = naive(
                        m,
                        n,
                        k,
                        |i, p| a[i * ars + p * acs],
                        |p, j| b[p * brs + j * bcs],
                    );
                    for acc in [false, true] {
                        let mut c = vec![1f32; m * n];
                        unsafe {
                            sgemm(
                                m,
                                n,
                                k,
                                c.as_mut_ptr(),
                                n as isize,
                                1,
                                acc,
                                a.as_ptr(),
                                ars as isize,
                                acs as isize,
                                b.as_ptr(),
                                brs as isize,
                                bcs as isize,
                                threads,
                            )
                        };
                        let want: Vec<f64> = want
                            .iter()
                            .map(|w| w + if acc { 1.0 } else { 0.0 })
                            .collect();
                        close(
                            &c,
                            &want,
                            &format!("{m}x{n}x{k} ta={ta} tb={tb} acc={acc} t={threads}"),
                        );
                    }
                }
                // gathered sources: rows / columns at scattered offsets
                let pitch = n + 3;
                let store: Vec<f32> = (0..(k + n + 2) * pitch + k + n)
                    .map(|i| ((i * 3 % 17) as f32 - 8.0) / 9.0)
                    .collect();
                let rows: Vec<isize> = (0..k)
                    .map(|p| ((p * 7) % (k + 1) * pitch) as isize)
                    .collect();
                let want = naive(
                    m,
                    n,
                    k,
                    |i, p| a[i * k + p],
                    |p, j| store[rows[p] as usize + j],
                );
                // C = A . B for a gathered B, checked against `want`
                let check = |b: BSrc, want: &[f64], what: &str| {
                    let mut c = vec![0f32; m * n];
                    unsafe {
                        sgemm_b(
                            m,
                            n,
                            k,
                            c.as_mut_ptr(),
                            n as isize,
                            1,
                            false,
                            a.as_ptr(),
                            k as isize,
                            1,
                            b,
                            threads,
                        )
                    };
                    close(&c, want, &format!("{what} {m}x{n}x{k} t={threads}"));
                };
                check(BSrc::Rows(store.as_ptr(), &rows), &want, "rows");
                let cols: Vec<isize> = (0..n)
                    .map(|j| ((j * 5) % (n + 1) * (k + 1)) as isize)
                    .collect();
                let store2: Vec<f32> = (0..(n + 1) * (k + 1) + k)
                    .map(|i| ((i * 3 % 19) as f32 - 9.0) / 9.0)
                    .collect();
                let want = naive(
                    m,
                    n,
                    k,
                    |i, p| a[i * k + p],
                    |p, j| store2[cols[j] as usize + p],
                );
                check(BSrc::Cols(store2.as_ptr(), &cols), &want, "cols");
            }
        }
    }

    #[test]
    fn packed_rhs_products_match_naive() {
        if !packed_available() {
            eprintln!("sgemm: not available on this CPU, skipped");
            return;
        }
        // (m, k, n): RNN-like steps, ragged edges, several depth blocks
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 7, 9),
            (32, 256, 1024),
            (13, 700, 37),
            (130, 40, 200),
        ] {
            let a: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7 % 23) as f32 - 11.0) / 13.0)
                .collect();
            for tb in [false, true] {
                // B stored (k, n), or (n, k) and read transposed
                let bs: Vec<f32> = (0..k * n)
                    .map(|i| ((i * 5 % 19) as f32 - 9.0) / 7.0)
                    .collect();
                let at = |p: usize, j: usize| if tb { bs[j * k + p] } else { bs[p * n + j] };
                let want = naive(m, n, k, |i, p| a[i * k + p], at);
                let (rs, cs) = if tb { (1, k as isize) } else { (n as isize, 1) };
                let pb = unsafe { PackedB::new(k, n, bs.as_ptr(), rs, cs) };
                for threads in [1, 2, 3] {
                    for acc in [false, true] {
                        let mut c = vec![0.5f32; m * n];
                        unsafe {
                            sgemm_packed(
                                m,
                                c.as_mut_ptr(),
                                n as isize,
                                acc,
                                a.as_ptr(),
                                k as isize,
                                1,
                                &pb,
                                threads,
                            )
                        };
                        for (i, (g, w)) in c.iter().zip(&want).enumerate() {
                            let w = if acc { w + 0.5 } else { *w };
                            assert!(
                                (*g as f64 - w).abs() < 1e-4 * (1.0 + w.abs()),
                                "{m}x{k}x{n} tb={tb} t={threads} acc={acc}: [{i}] {g} vs {w}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    /// cargo test --release -p oxnet-core sgemm_vs_gemm -- --ignored --nocapture
    #[test]
    #[ignore]
    fn sgemm_vs_gemm() {
        for &(m, n, k, bt) in &[
            (50usize, 64usize, 500usize, false),
            (50, 500, 64, true),
            (500, 64, 50, false),
            (20, 576, 25, false),
            (20, 25, 576, true),
            (64, 3136, 576, false),
            (64, 64, 64, false),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
            let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.1).collect();
            let mut c = vec![0f32; m * n];
            let (brs, bcs) = if bt {
                (1isize, k as isize)
            } else {
                (n as isize, 1isize)
            };
            let reps = (2e8 / (2.0 * (m * n * k) as f64)).max(3.0) as usize;
            let mut best = [f64::MAX; 2];
            for _ in 0..5 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    unsafe {
                        sgemm_b(
                            m,
                            n,
                            k,
                            c.as_mut_ptr(),
                            n as isize,
                            1,
                            false,
                            a.as_ptr(),
                            k as isize,
                            1,
                            BSrc::Strided(imp::Mat {
                                ptr: b.as_ptr(),
                                rs: brs,
                                cs: bcs,
                            }),
                            1,
                        )
                    };
                }
                best[0] = best[0].min(t.elapsed().as_secs_f64());
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    unsafe {
                        gemm::gemm(
                            m,
                            n,
                            k,
                            c.as_mut_ptr(),
                            1,
                            n as isize,
                            false,
                            a.as_ptr(),
                            1,
                            k as isize,
                            b.as_ptr(),
                            bcs,
                            brs,
                            0.0,
                            1.0,
                            false,
                            false,
                            false,
                            gemm::Parallelism::None,
                        )
                    };
                }
                best[1] = best[1].min(t.elapsed().as_secs_f64());
            }
            let gf = |t: f64| 2.0 * (m * n * k * reps) as f64 / t / 1e9;
            println!(
                "m {m} n {n} k {k} bt {bt}: sgemm {:.1} GFLOP/s, gemm crate {:.1}",
                gf(best[0]),
                gf(best[1])
            );
        }
    }
}
