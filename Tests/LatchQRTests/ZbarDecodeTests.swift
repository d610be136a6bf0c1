import Foundation
import Testing
@testable import LatchQR

/// One round trip through a real decoder.
struct DecodeCase: Sendable, CustomTestStringConvertible {
    let text: String
    let level: QRCode.ErrorCorrection
    let minimumVersion: Int
    let expectedVersion: Int?
    let scale: Int
    let label: String

    init(_ label: String, _ text: String, _ level: QRCode.ErrorCorrection = .medium,
         minimumVersion: Int = 1, version: Int? = nil, scale: Int = 4) {
        self.label = label
        self.text = text
        self.level = level
        self.minimumVersion = minimumVersion
        self.expectedVersion = version
        self.scale = scale
    }

    var testDescription: String { "\(label) (\(text.utf8.count) bytes, \(level))" }
}

let decodeCases: [DecodeCase] = [
    // Level M across the version range, boundaries included.
    DecodeCase("token", Payloads.token(1), version: 1),
    DecodeCase("token", Payloads.token(14), version: 1),
    DecodeCase("token", Payloads.token(15), version: 2),
    DecodeCase("token", Payloads.token(50)),
    DecodeCase("token", Payloads.token(100)),
    DecodeCase("token", Payloads.token(200)),
    DecodeCase("token", Payloads.token(400)),
    DecodeCase("token", Payloads.token(800)),
    DecodeCase("token", Payloads.token(1200)),
    DecodeCase("token", Payloads.token(1800)),
    DecodeCase("token", Payloads.token(2331), version: 40),
    // Other levels, including each level's version 1 and version 40 maxima.
    DecodeCase("token", Payloads.token(17), .low, version: 1),
    DecodeCase("token", Payloads.token(500), .low),
    DecodeCase("token", Payloads.token(2953), .low, version: 40),
    DecodeCase("token", Payloads.token(11), .quartile, version: 1),
    DecodeCase("token", Payloads.token(300), .quartile),
    DecodeCase("token", Payloads.token(1663), .quartile, version: 40),
    DecodeCase("token", Payloads.token(7), .high, version: 1),
    DecodeCase("token", Payloads.token(150), .high),
    DecodeCase("token", Payloads.token(1273), .high, version: 40),
    // Latch-style URLs.
    DecodeCase("url", Payloads.url(60)),
    DecodeCase("url", Payloads.url(120), .quartile),
    DecodeCase("url", Payloads.url(250), .high),
    DecodeCase("url", Payloads.url(700), .low),
    // Printable ASCII with punctuation and spaces.
    DecodeCase("ascii", "Latch: sign in? {\"nonce\":\"a1~b2\"} 100% <ok> & done!", .quartile),
    // Forced minimum versions (version information from 7).
    DecodeCase("minVersion", "hi", minimumVersion: 7, version: 7),
    DecodeCase("minVersion", "hi", .high, minimumVersion: 21, version: 21),
    // Small modules.
    DecodeCase("scale2", Payloads.token(30), scale: 2),
    DecodeCase("scale2", Payloads.token(600), .low, scale: 2),
]

@Suite("Round trip through zbarimg", .enabled(if: Zbar.shouldRun))
struct ZbarDecodeTests {
    @Test("zbarimg is available (or LATCH_QR_ALLOW_NO_ZBAR=1)")
    func zbarPresent() {
        #expect(Zbar.executable != nil, Zbar.missingMessage)
    }

    @Test("decodes to the payload", arguments: decodeCases)
    func roundTrip(_ testCase: DecodeCase) async throws {
        guard Zbar.executable != nil else {
            Issue.record(Zbar.missingMessage)
            return
        }
        let code = try QRCode(testCase.text, errorCorrection: testCase.level, minimumVersion: testCase.minimumVersion)
        if let version = testCase.expectedVersion { #expect(code.version == version) }
        let (status, text) = try await Zbar.decodeText(code.png(scale: testCase.scale, border: 4))
        #expect(status == 0, "zbarimg exit status \(status) for v\(code.version) mask \(code.mask)")
        #expect(text == testCase.text, "v\(code.version) mask \(code.mask): decoded \(text.utf8.count) bytes")
    }

    @Test("negative control: an image without a symbol does not decode")
    func negativeControl() async throws {
        guard Zbar.executable != nil else {
            Issue.record(Zbar.missingMessage)
            return
        }
        let side = 120
        let white = PNG.grayscale(width: side, height: side, bitDepth: 1,
                                  scanlines: [UInt8](repeating: 0xFF, count: PNG.rowBytes(width: side, bitDepth: 1) * side))
        let (status, text) = try await Zbar.decodeText(white)
        #expect(status != 0)
        #expect(text.isEmpty)
    }

    @Test("every data mask decodes (forced), version 8 with version information", arguments: Array(0..<8))
    func forcedMask(_ mask: Int) async throws {
        guard Zbar.executable != nil else {
            Issue.record(Zbar.missingMessage)
            return
        }
        let text = Payloads.url(150)
        let code = try QRCode(Array(text.utf8), errorCorrection: .medium, minimumVersion: 8, forcedMask: mask)
        #expect(code.version == 8 && code.mask == mask)
        let (status, decoded) = try await Zbar.decodeText(code.png())
        #expect(status == 0)
        #expect(decoded == text, "mask \(mask)")
    }

    @Test("binary payload round trip with zbarimg -Sbinary (raw bytes, no charset guessing)")
    func binaryRoundTrip() async throws {
        guard Zbar.executable != nil else {
            Issue.record(Zbar.missingMessage)
            return
        }
        var rng = SeededGenerator(seed: 42)
        for length in [1, 64, 333] {
            let payload = Payloads.randomBytes(length, rng: &rng)
            let code = try QRCode(payload, errorCorrection: .quartile)
            let (status, output) = try await Zbar.decode(code.png(), binary: true)
            #expect(status == 0)
            // -Sbinary writes the bytes as-is; --raw may add one newline.
            var bytes = output
            if bytes.count == payload.count + 1, bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
            #expect(bytes == payload, "\(length) random bytes, v\(code.version)")
        }
    }
}
