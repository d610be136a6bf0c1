import Foundation
import LatchTesting
import Testing
@testable import LatchQR

/// Deterministic generator (SplitMix64) so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum Payloads {
    static let base64url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let urlPrefix = "https://latch.example/open?payload="

    /// `length` base64url characters, seeded by the length.
    static func token(_ length: Int, seed: UInt64 = 0) -> String {
        var rng = SeededGenerator(seed: UInt64(length) &* 7919 &+ seed)
        let bytes = (0..<length).map { _ in base64url[Int(rng.next() % 64)] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A Latch-style URL of exactly `length` characters (length ≥ prefix).
    static func url(_ length: Int) -> String {
        urlPrefix + token(max(0, length - urlPrefix.utf8.count), seed: 99)
    }

    static func randomBytes(_ length: Int, rng: inout SeededGenerator) -> [UInt8] {
        (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }
}

/// Published format information bit strings (ISO/IEC 18004 Annex C,
/// Table C.1; also tabulated by Thonky's QR tutorial), index = mask.
let publishedFormatBits: [QRCode.ErrorCorrection: [String]] = [
    .low: ["111011111000100", "111001011110011", "111110110101010", "111100010011101",
           "110011000101111", "110001100011000", "110110001000001", "110100101110110"],
    .medium: ["101010000010010", "101000100100101", "101111001111100", "101101101001011",
              "100010111111001", "100000011001110", "100111110010111", "100101010100000"],
    .quartile: ["011010101011111", "011000001101000", "011111100110001", "011101000000110",
                "010010010110100", "010000110000011", "010111011011010", "010101111101101"],
    .high: ["001011010001001", "001001110111110", "001110011100111", "001100111010000",
            "000011101100010", "000001001010101", "000110100001100", "000100000111011"],
]

/// Reads the two copies of the format information from a symbol, as
/// 15-character bit strings, most significant bit (bit 14) first.
/// Positions per ISO/IEC 18004 §7.9.1 Figure 25, written out independently
/// of the library's drawing code.
func readFormatCopies(_ code: QRCode) -> (String, String) {
    let n = code.size
    // Copy 1: bit 14..9 along row 8 at columns 0..5, bit 8 at (7,8),
    // bit 7 at (8,8), bit 6 at (8,7), bits 5..0 up column 8 rows 5..0.
    var first: [(Int, Int)] = (0...5).map { ($0, 8) }
    first += [(7, 8), (8, 8), (8, 7)]
    first += (0...5).reversed().map { (8, $0) }
    // Copy 2: bits 14..8 up column 8 from the bottom row (rows n-1..n-7),
    // bits 7..0 along row 8 at columns n-8..n-1.
    var second: [(Int, Int)] = (1...7).map { (8, n - $0) }
    second += (n - 8..<n).map { ($0, 8) }
    func bits(_ positions: [(Int, Int)]) -> String {
        String(positions.map { code[$0.0, $0.1] ? "1" : "0" })
    }
    return (bits(first), bits(second))
}

/// (level, mask) whose published format bits equal `bits`, if any.
func decodeFormat(_ bits: String) -> (QRCode.ErrorCorrection, Int)? {
    for (level, table) in publishedFormatBits {
        if let mask = table.firstIndex(of: bits) { return (level, mask) }
    }
    return nil
}

// MARK: PNG parsing (independent of the writer)

struct ParsedPNG {
    var width = 0
    var height = 0
    var bitDepth = 0
    var colorType = 0
    var chunkTypes: [String] = []
    var idat: [UInt8] = []
}

enum PNGCheckError: Error, CustomStringConvertible {
    case malformed(String)
    var description: String { if case .malformed(let s) = self { return s } else { return "" } }
}

func bigEndian32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
}

/// Bitwise CRC-32 (no table), to check the writer's table-driven one.
func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// Splits a PNG into chunks, verifying the signature and every CRC.
func parsePNG(_ png: [UInt8]) throws -> ParsedPNG {
    guard png.count >= 8, Array(png[0..<8]) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
        throw PNGCheckError.malformed("bad signature")
    }
    var result = ParsedPNG()
    var i = 8
    while i < png.count {
        guard i + 12 <= png.count else { throw PNGCheckError.malformed("truncated chunk header") }
        let length = Int(bigEndian32(png, i))
        guard i + 12 + length <= png.count else { throw PNGCheckError.malformed("truncated chunk") }
        let type = String(decoding: png[(i + 4)..<(i + 8)], as: UTF8.self)
        let data = Array(png[(i + 8)..<(i + 8 + length)])
        let crc = bigEndian32(png, i + 8 + length)
        guard crc == referenceCRC32(Array(png[(i + 4)..<(i + 8 + length)])) else {
            throw PNGCheckError.malformed("CRC mismatch in \(type)")
        }
        result.chunkTypes.append(type)
        switch type {
        case "IHDR":
            guard length == 13 else { throw PNGCheckError.malformed("IHDR length \(length)") }
            result.width = Int(bigEndian32(data, 0))
            result.height = Int(bigEndian32(data, 4))
            result.bitDepth = Int(data[8])
            result.colorType = Int(data[9])
            guard data[10] == 0, data[11] == 0, data[12] == 0 else {
                throw PNGCheckError.malformed("compression/filter/interlace not 0")
            }
        case "IDAT":
            result.idat += data
        default:
            break
        }
        i += 12 + length
    }
    return result
}

/// Inflates a zlib stream made only of stored blocks, checking the header,
/// every LEN/NLEN pair and the Adler-32 trailer. Returns the data and the
/// number of blocks.
func inflateStored(_ z: [UInt8]) throws -> (data: [UInt8], blocks: Int) {
    guard z.count >= 6 else { throw PNGCheckError.malformed("zlib stream too short") }
    guard z[0] & 0x0F == 8, z[0] >> 4 <= 7 else { throw PNGCheckError.malformed("not deflate") }
    guard (Int(z[0]) * 256 + Int(z[1])) % 31 == 0 else { throw PNGCheckError.malformed("FCHECK") }
    guard z[1] & 0x20 == 0 else { throw PNGCheckError.malformed("preset dictionary") }
    var out: [UInt8] = []
    var i = 2
    var blocks = 0
    while true {
        guard i + 5 <= z.count else { throw PNGCheckError.malformed("truncated block") }
        let header = z[i]
        guard (header >> 1) & 3 == 0 else { throw PNGCheckError.malformed("block type not stored") }
        let len = Int(z[i + 1]) | Int(z[i + 2]) << 8
        let nlen = Int(z[i + 3]) | Int(z[i + 4]) << 8
        guard len ^ nlen == 0xFFFF else { throw PNGCheckError.malformed("NLEN mismatch") }
        guard i + 5 + len <= z.count else { throw PNGCheckError.malformed("block overruns") }
        out += z[(i + 5)..<(i + 5 + len)]
        i += 5 + len
        blocks += 1
        if header & 1 == 1 { break }
    }
    guard i + 4 == z.count else { throw PNGCheckError.malformed("trailing bytes after Adler-32") }
    // Adler-32 computed naively here, independent of the writer.
    var a = 1, b = 0
    for byte in out { a = (a + Int(byte)) % 65521; b = (b + a) % 65521 }
    guard bigEndian32(z, i) == UInt32(b << 16 | a) else { throw PNGCheckError.malformed("Adler-32 mismatch") }
    return (out, blocks)
}

// MARK: zbarimg

enum Zbar {
    static let executable: String? = find("zbarimg")
    static var missingAllowed: Bool {
        ProcessInfo.processInfo.environment["LATCH_QR_ALLOW_NO_ZBAR"] == "1"
    }
    /// Decoding tests run when zbarimg exists, and also when it is missing
    /// but not explicitly allowed to be (so they fail loudly).
    static var shouldRun: Bool { executable != nil || !missingAllowed }

    static let missingMessage: Comment = """
        zbarimg not found on PATH: install Debian's zbar-tools \
        (apt-get install -y zbar-tools) or set LATCH_QR_ALLOW_NO_ZBAR=1 to skip decoding tests
        """

    private static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `zbarimg --raw -q`, QR codes only (other symbologies can see a false EAN in a QR code's modules), plus
    /// `-Sbinary` when asked, on the PNG (at most 60 s; waiting blocks no thread). Returns the exit status and
    /// standard output.
    static func decode(_ png: [UInt8], binary: Bool = false) async throws -> (status: Int32, output: [UInt8]) {
        guard let zbar = executable else { throw PNGCheckError.malformed("zbarimg missing") }
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("latchqr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        var arguments = ["--raw", "-q", "-Sdisable", "-Sqrcode.enable"]
        if binary { arguments.append("-Sbinary") }
        arguments.append(file.path)
        return try await ChildProcess.runCapturingStandardOutput(zbar, arguments, timeout: 60)
    }

    /// Decoded text with zbarimg's trailing newline removed.
    static func decodeText(_ png: [UInt8]) async throws -> (status: Int32, text: String) {
        var (status, output) = try await decode(png)
        if output.last == UInt8(ascii: "\n") { output.removeLast() }
        return (status, String(decoding: output, as: UTF8.self))
    }
}
