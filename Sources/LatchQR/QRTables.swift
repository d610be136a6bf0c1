// Symbol tables and BCH codes for QR Code (ISO/IEC 18004:2015).

extension QRCode.ErrorCorrection {
    /// Row index into `QRTables.blockLayouts` (L, M, Q, H).
    var tableIndex: Int {
        switch self {
        case .low: return 0
        case .medium: return 1
        case .quartile: return 2
        case .high: return 3
        }
    }

    /// The two-bit error correction level indicator of the format
    /// information (ISO/IEC 18004 §7.9.1, Table 12): L = 01, M = 00, Q = 11, H = 10.
    var formatIndicator: Int {
        switch self {
        case .low: return 0b01
        case .medium: return 0b00
        case .quartile: return 0b11
        case .high: return 0b10
        }
    }
}

/// Error correction block structure of one version and level
/// (ISO/IEC 18004 §7.5.1, Table 9). Blocks of group 2, when present, hold
/// one more data codeword than the blocks of group 1; every block carries
/// the same number of error correction codewords.
struct BlockLayout: Sendable, Equatable {
    let ecCodewordsPerBlock: Int
    let group1Blocks: Int
    let group1DataCodewords: Int
    let group2Blocks: Int
    let group2DataCodewords: Int

    var blockCount: Int { group1Blocks + group2Blocks }
    var dataCodewords: Int { group1Blocks * group1DataCodewords + group2Blocks * group2DataCodewords }
    var totalCodewords: Int { dataCodewords + ecCodewordsPerBlock * blockCount }

    /// Data codeword count of each block, in block order (group 1 first).
    var dataCodewordsPerBlock: [Int] {
        Array(repeating: group1DataCodewords, count: group1Blocks)
            + Array(repeating: group2DataCodewords, count: group2Blocks)
    }
}

enum QRTables {
    static let versions = 1...40

    /// Side length in modules: 17 + 4·version (ISO/IEC 18004 §5.3.1).
    static func size(version: Int) -> Int { 17 + 4 * version }

    static func layout(version: Int, level: QRCode.ErrorCorrection) -> BlockLayout {
        blockLayouts[version - 1][level.tableIndex]
    }

    private static func B(_ ec: Int, _ g1: Int, _ d1: Int, _ g2: Int, _ d2: Int) -> BlockLayout {
        BlockLayout(ecCodewordsPerBlock: ec, group1Blocks: g1, group1DataCodewords: d1,
                    group2Blocks: g2, group2DataCodewords: d2)
    }

    /// ISO/IEC 18004 §7.5.1 Table 9, one row per version, columns L, M, Q, H.
    /// Each entry: (EC codewords per block, blocks in group 1, data codewords
    /// per group-1 block, blocks in group 2, data codewords per group-2 block).
    static let blockLayouts: [[BlockLayout]] = [
        /*  1 */ [B( 7,  1,  19,  0,   0), B(10,  1,  16,  0,   0), B(13,  1,  13,  0,   0), B(17,  1,   9,  0,   0)],
        /*  2 */ [B(10,  1,  34,  0,   0), B(16,  1,  28,  0,   0), B(22,  1,  22,  0,   0), B(28,  1,  16,  0,   0)],
        /*  3 */ [B(15,  1,  55,  0,   0), B(26,  1,  44,  0,   0), B(18,  2,  17,  0,   0), B(22,  2,  13,  0,   0)],
        /*  4 */ [B(20,  1,  80,  0,   0), B(18,  2,  32,  0,   0), B(26,  2,  24,  0,   0), B(16,  4,   9,  0,   0)],
        /*  5 */ [B(26,  1, 108,  0,   0), B(24,  2,  43,  0,   0), B(18,  2,  15,  2,  16), B(22,  2,  11,  2,  12)],
        /*  6 */ [B(18,  2,  68,  0,   0), B(16,  4,  27,  0,   0), B(24,  4,  19,  0,   0), B(28,  4,  15,  0,   0)],
        /*  7 */ [B(20,  2,  78,  0,   0), B(18,  4,  31,  0,   0), B(18,  2,  14,  4,  15), B(26,  4,  13,  1,  14)],
        /*  8 */ [B(24,  2,  97,  0,   0), B(22,  2,  38,  2,  39), B(22,  4,  18,  2,  19), B(26,  4,  14,  2,  15)],
        /*  9 */ [B(30,  2, 116,  0,   0), B(22,  3,  36,  2,  37), B(20,  4,  16,  4,  17), B(24,  4,  12,  4,  13)],
        /* 10 */ [B(18,  2,  68,  2,  69), B(26,  4,  43,  1,  44), B(24,  6,  19,  2,  20), B(28,  6,  15,  2,  16)],
        /* 11 */ [B(20,  4,  81,  0,   0), B(30,  1,  50,  4,  51), B(28,  4,  22,  4,  23), B(24,  3,  12,  8,  13)],
        /* 12 */ [B(24,  2,  92,  2,  93), B(22,  6,  36,  2,  37), B(26,  4,  20,  6,  21), B(28,  7,  14,  4,  15)],
        /* 13 */ [B(26,  4, 107,  0,   0), B(22,  8,  37,  1,  38), B(24,  8,  20,  4,  21), B(22, 12,  11,  4,  12)],
        /* 14 */ [B(30,  3, 115,  1, 116), B(24,  4,  40,  5,  41), B(20, 11,  16,  5,  17), B(24, 11,  12,  5,  13)],
        /* 15 */ [B(22,  5,  87,  1,  88), B(24,  5,  41,  5,  42), B(30,  5,  24,  7,  25), B(24, 11,  12,  7,  13)],
        /* 16 */ [B(24,  5,  98,  1,  99), B(28,  7,  45,  3,  46), B(24, 15,  19,  2,  20), B(30,  3,  15, 13,  16)],
        /* 17 */ [B(28,  1, 107,  5, 108), B(28, 10,  46,  1,  47), B(28,  1,  22, 15,  23), B(28,  2,  14, 17,  15)],
        /* 18 */ [B(30,  5, 120,  1, 121), B(26,  9,  43,  4,  44), B(28, 17,  22,  1,  23), B(28,  2,  14, 19,  15)],
        /* 19 */ [B(28,  3, 113,  4, 114), B(26,  3,  44, 11,  45), B(26, 17,  21,  4,  22), B(26,  9,  13, 16,  14)],
        /* 20 */ [B(28,  3, 107,  5, 108), B(26,  3,  41, 13,  42), B(30, 15,  24,  5,  25), B(28, 15,  15, 10,  16)],
        /* 21 */ [B(28,  4, 116,  4, 117), B(26, 17,  42,  0,   0), B(28, 17,  22,  6,  23), B(30, 19,  16,  6,  17)],
        /* 22 */ [B(28,  2, 111,  7, 112), B(28, 17,  46,  0,   0), B(30,  7,  24, 16,  25), B(24, 34,  13,  0,   0)],
        /* 23 */ [B(30,  4, 121,  5, 122), B(28,  4,  47, 14,  48), B(30, 11,  24, 14,  25), B(30, 16,  15, 14,  16)],
        /* 24 */ [B(30,  6, 117,  4, 118), B(28,  6,  45, 14,  46), B(30, 11,  24, 16,  25), B(30, 30,  16,  2,  17)],
        /* 25 */ [B(26,  8, 106,  4, 107), B(28,  8,  47, 13,  48), B(30,  7,  24, 22,  25), B(30, 22,  15, 13,  16)],
        /* 26 */ [B(28, 10, 114,  2, 115), B(28, 19,  46,  4,  47), B(28, 28,  22,  6,  23), B(30, 33,  16,  4,  17)],
        /* 27 */ [B(30,  8, 122,  4, 123), B(28, 22,  45,  3,  46), B(30,  8,  23, 26,  24), B(30, 12,  15, 28,  16)],
        /* 28 */ [B(30,  3, 117, 10, 118), B(28,  3,  45, 23,  46), B(30,  4,  24, 31,  25), B(30, 11,  15, 31,  16)],
        /* 29 */ [B(30,  7, 116,  7, 117), B(28, 21,  45,  7,  46), B(30,  1,  23, 37,  24), B(30, 19,  15, 26,  16)],
        /* 30 */ [B(30,  5, 115, 10, 116), B(28, 19,  47, 10,  48), B(30, 15,  24, 25,  25), B(30, 23,  15, 25,  16)],
        /* 31 */ [B(30, 13, 115,  3, 116), B(28,  2,  46, 29,  47), B(30, 42,  24,  1,  25), B(30, 23,  15, 28,  16)],
        /* 32 */ [B(30, 17, 115,  0,   0), B(28, 10,  46, 23,  47), B(30, 10,  24, 35,  25), B(30, 19,  15, 35,  16)],
        /* 33 */ [B(30, 17, 115,  1, 116), B(28, 14,  46, 21,  47), B(30, 29,  24, 19,  25), B(30, 11,  15, 46,  16)],
        /* 34 */ [B(30, 13, 115,  6, 116), B(28, 14,  46, 23,  47), B(30, 44,  24,  7,  25), B(30, 59,  16,  1,  17)],
        /* 35 */ [B(30, 12, 121,  7, 122), B(28, 12,  47, 26,  48), B(30, 39,  24, 14,  25), B(30, 22,  15, 41,  16)],
        /* 36 */ [B(30,  6, 121, 14, 122), B(28,  6,  47, 34,  48), B(30, 46,  24, 10,  25), B(30,  2,  15, 64,  16)],
        /* 37 */ [B(30, 17, 122,  4, 123), B(28, 29,  46, 14,  47), B(30, 49,  24, 10,  25), B(30, 24,  15, 46,  16)],
        /* 38 */ [B(30,  4, 122, 18, 123), B(28, 13,  46, 32,  47), B(30, 48,  24, 14,  25), B(30, 42,  15, 32,  16)],
        /* 39 */ [B(30, 20, 117,  4, 118), B(28, 40,  47,  7,  48), B(30, 43,  24, 22,  25), B(30, 10,  15, 67,  16)],
        /* 40 */ [B(30, 19, 118,  6, 119), B(28, 18,  47, 31,  48), B(30, 34,  24, 34,  25), B(30, 20,  15, 61,  16)],
    ]

    /// Row/column coordinates of alignment pattern centres
    /// (ISO/IEC 18004 §6.3.6, Annex E, Table E.1), indexed by version − 1.
    /// Centres are every combination of two coordinates, except the three
    /// that would overlap a finder pattern.
    static let alignmentCenters: [[Int]] = [
        /*  1 */ [],
        /*  2 */ [6, 18],
        /*  3 */ [6, 22],
        /*  4 */ [6, 26],
        /*  5 */ [6, 30],
        /*  6 */ [6, 34],
        /*  7 */ [6, 22, 38],
        /*  8 */ [6, 24, 42],
        /*  9 */ [6, 26, 46],
        /* 10 */ [6, 28, 50],
        /* 11 */ [6, 30, 54],
        /* 12 */ [6, 32, 58],
        /* 13 */ [6, 34, 62],
        /* 14 */ [6, 26, 46, 66],
        /* 15 */ [6, 26, 48, 70],
        /* 16 */ [6, 26, 50, 74],
        /* 17 */ [6, 30, 54, 78],
        /* 18 */ [6, 30, 56, 82],
        /* 19 */ [6, 30, 58, 86],
        /* 20 */ [6, 34, 62, 90],
        /* 21 */ [6, 28, 50, 72, 94],
        /* 22 */ [6, 26, 50, 74, 98],
        /* 23 */ [6, 30, 54, 78, 102],
        /* 24 */ [6, 28, 54, 80, 106],
        /* 25 */ [6, 32, 58, 84, 110],
        /* 26 */ [6, 30, 58, 86, 114],
        /* 27 */ [6, 34, 62, 90, 118],
        /* 28 */ [6, 26, 50, 74, 98, 122],
        /* 29 */ [6, 30, 54, 78, 102, 126],
        /* 30 */ [6, 26, 52, 78, 104, 130],
        /* 31 */ [6, 30, 56, 82, 108, 134],
        /* 32 */ [6, 34, 60, 86, 112, 138],
        /* 33 */ [6, 30, 58, 86, 114, 142],
        /* 34 */ [6, 34, 62, 90, 118, 146],
        /* 35 */ [6, 30, 54, 78, 102, 126, 150],
        /* 36 */ [6, 24, 50, 76, 102, 128, 154],
        /* 37 */ [6, 28, 54, 80, 106, 132, 158],
        /* 38 */ [6, 32, 58, 84, 110, 136, 162],
        /* 39 */ [6, 26, 54, 82, 110, 138, 166],
        /* 40 */ [6, 30, 58, 86, 114, 142, 170],
    ]

    /// Remainder of `value · x^degree` divided by `generator` over GF(2)
    /// (the check bits of a systematic BCH code).
    static func bchRemainder(_ value: Int, generator: Int, degree: Int) -> Int {
        var r = value << degree
        var bit = r.bitWidth - 1 - r.leadingZeroBitCount
        while bit >= degree {
            if (r >> bit) & 1 == 1 { r ^= generator << (bit - degree) }
            bit -= 1
        }
        return r
    }

    /// The 15 format information bits for a level and mask pattern, most
    /// significant bit first (ISO/IEC 18004 §7.9.1): 5 data bits (level
    /// indicator, mask reference), 10 BCH(15,5) check bits with generator
    /// x^10 + x^8 + x^5 + x^4 + x^2 + x + 1 (0x537), then XOR with 0x5412 so
    /// the result is never all zero.
    static func formatBits(level: QRCode.ErrorCorrection, mask: Int) -> Int {
        let data = (level.formatIndicator << 3) | (mask & 7)
        return ((data << 10) | bchRemainder(data, generator: 0x537, degree: 10)) ^ 0x5412
    }

    /// The 18 version information bits for versions 7–40 (ISO/IEC 18004
    /// §7.10, Annex D): 6-bit version number followed by 12 BCH(18,6) check
    /// bits with generator x^12 + x^11 + x^10 + x^9 + x^8 + x^5 + x^2 + 1 (0x1F25).
    /// Not masked.
    static func versionBits(_ version: Int) -> Int {
        (version << 12) | bchRemainder(version, generator: 0x1F25, degree: 12)
    }

    /// Bits of the byte mode character count indicator (ISO/IEC 18004 §7.4.1, Table 3).
    static func byteCountBits(version: Int) -> Int { version <= 9 ? 8 : 16 }
}
