// A QR Code symbol (ISO/IEC 18004:2015, Model 2) in byte mode.

/// An encoded QR Code symbol.
///
/// The payload is encoded as a single byte-mode segment (ISO/IEC 18004
/// §7.4.5) with no ECI header; the smallest version at or above
/// `minimumVersion` that holds it is used, and the data mask with the lowest
/// penalty score (§7.8.3) is applied.
public struct QRCode: Sendable, Equatable {
    /// Error correction level (ISO/IEC 18004 §5.3.8): recovers roughly
    /// 7 %, 15 %, 25 % or 30 % of the codewords.
    public enum ErrorCorrection: Sendable, CaseIterable, Equatable {
        case low, medium, quartile, high
    }

    public enum Failure: Error, Equatable {
        /// The payload exceeds the byte-mode capacity of version 40 at the
        /// requested level.
        case payloadTooLong(bytes: Int, maximum: Int)
    }

    /// Symbol version, 1...40.
    public let version: Int
    /// Side length in modules, 17 + 4 · version (excluding the quiet zone).
    public let size: Int
    /// The data mask pattern applied, 0...7 (ISO/IEC 18004 §7.8.2).
    public let mask: Int
    public let errorCorrection: ErrorCorrection
    /// The finished module grid.
    let matrix: QRMatrix

    /// Encodes `payload` as a byte-mode symbol.
    /// - Parameter minimumVersion: the smallest version to consider; values
    ///   outside 1...40 are clamped.
    public init(_ payload: [UInt8], errorCorrection: ErrorCorrection = .medium, minimumVersion: Int = 1) throws(Failure) {
        try self.init(payload, errorCorrection: errorCorrection, minimumVersion: minimumVersion, forcedMask: nil)
    }

    /// As the public initializer; a non-nil `forcedMask` (0...7) skips the
    /// penalty evaluation and uses that mask (for tests).
    init(_ payload: [UInt8], errorCorrection: ErrorCorrection, minimumVersion: Int, forcedMask: Int?) throws(Failure) {
        let level = errorCorrection
        let lowest = min(max(minimumVersion, 1), 40)
        guard let version = (lowest...40).first(where: { payload.count <= QRCode.byteCapacity(version: $0, errorCorrection: level) }) else {
            throw .payloadTooLong(bytes: payload.count, maximum: QRCode.byteCapacity(version: 40, errorCorrection: level))
        }
        let codewords = QRCode.codewords(for: payload, version: version, level: level)
        let base = QRCode.unmaskedMatrix(codewords: codewords, version: version)
        var best: (mask: Int, matrix: QRMatrix, penalty: Int)? = nil
        let masks = forcedMask.map { [min(max($0, 0), 7)] } ?? Array(0..<8)
        for mask in masks {
            let candidate = QRCode.masked(base, level: level, mask: mask)
            let penalty = candidate.fastPenalty()
            if best == nil || penalty < best!.penalty {
                best = (mask, candidate, penalty)
            }
        }
        self.version = version
        self.size = base.size
        self.errorCorrection = level
        self.mask = best!.mask
        self.matrix = best!.matrix
    }

    /// Encodes the UTF-8 bytes of `text`. No ECI designator is written
    /// (readers commonly detect UTF-8; plain ASCII is unambiguous).
    public init(_ text: String, errorCorrection: ErrorCorrection = .medium, minimumVersion: Int = 1) throws(Failure) {
        try self.init(Array(text.utf8), errorCorrection: errorCorrection, minimumVersion: minimumVersion)
    }

    /// true = dark. Coordinates outside the symbol are light (quiet zone).
    public subscript(x: Int, y: Int) -> Bool { matrix[x, y] }

    /// Byte-mode capacity in bytes of a version at a level (ISO/IEC 18004
    /// §7.4.10, Table 7): data bits minus the 4-bit mode indicator and the
    /// character count indicator, in whole bytes. 0 for versions outside 1...40.
    public static func byteCapacity(version: Int, errorCorrection: ErrorCorrection) -> Int {
        guard QRTables.versions.contains(version) else { return 0 }
        let dataBits = QRTables.layout(version: version, level: errorCorrection).dataCodewords * 8
        return (dataBits - 4 - QRTables.byteCountBits(version: version)) / 8
    }

    // MARK: Encoding steps (internal so tests can inspect them)

    /// The data codewords of §7.4: mode indicator 0100, character count,
    /// the bytes, a terminator of up to four 0 bits (§7.4.9), zero bits to
    /// the byte boundary, then pad codewords 11101100 / 00010001 alternately
    /// (§7.4.10). The caller guarantees the payload fits the version.
    static func dataCodewords(for payload: [UInt8], version: Int, level: ErrorCorrection) -> [UInt8] {
        let capacity = QRTables.layout(version: version, level: level).dataCodewords
        var bits = BitWriter()
        bits.append(0b0100, count: 4)
        bits.append(payload.count, count: QRTables.byteCountBits(version: version))
        for byte in payload { bits.append(Int(byte), count: 8) }
        bits.append(0, count: min(4, capacity * 8 - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var bytes = bits.bytes
        var pad: UInt8 = 0xEC
        while bytes.count < capacity {
            bytes.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        return bytes
    }

    /// The final codeword sequence (§7.6): data split into blocks (§7.5.1),
    /// Reed–Solomon codewords per block (§7.5.2), then data codewords
    /// interleaved column-wise across blocks, followed by the error
    /// correction codewords interleaved the same way.
    static func codewords(for payload: [UInt8], version: Int, level: ErrorCorrection) -> [UInt8] {
        let layout = QRTables.layout(version: version, level: level)
        let data = dataCodewords(for: payload, version: version, level: level)
        var blocks: [[UInt8]] = []
        var offset = 0
        for count in layout.dataCodewordsPerBlock {
            blocks.append(Array(data[offset..<(offset + count)]))
            offset += count
        }
        let ecBlocks = blocks.map { ReedSolomon.errorCorrection(for: $0, degree: layout.ecCodewordsPerBlock) }
        var result: [UInt8] = []
        result.reserveCapacity(layout.totalCodewords)
        let longest = blocks.map(\.count).max() ?? 0
        for i in 0..<longest {
            for block in blocks where i < block.count { result.append(block[i]) }
        }
        for i in 0..<layout.ecCodewordsPerBlock {
            for block in ecBlocks { result.append(block[i]) }
        }
        return result
    }

    /// Function patterns plus placed codewords, before masking.
    static func unmaskedMatrix(codewords: [UInt8], version: Int) -> QRMatrix {
        var matrix = QRMatrix(version: version)
        matrix.placeCodewords(codewords)
        return matrix
    }

    /// `base` with data mask `mask` applied and the matching format
    /// information drawn: one of the eight candidates of §7.8.3.
    static func masked(_ base: QRMatrix, level: ErrorCorrection, mask: Int) -> QRMatrix {
        var matrix = base
        matrix.applyMask(mask)
        matrix.drawFormatBits(QRTables.formatBits(level: level, mask: mask))
        return matrix
    }
}

/// Accumulates bits most significant first.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count n: Int) {
        guard n > 0 else { return }
        for i in stride(from: n - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> i) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80 >> (count % 8)) }
            count += 1
        }
    }
}
