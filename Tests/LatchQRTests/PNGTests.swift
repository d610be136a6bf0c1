import Foundation
import Testing
@testable import LatchQR

@Suite("PNG writer")
struct PNGTests {
    @Test("CRC-32 and Adler-32 check values")
    func checksums() {
        let check = Array("123456789".utf8)
        #expect(CRC32.checksum(check) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
        #expect(CRC32.checksum(Array("IEND".utf8)) == 0xAE42_6082)
        #expect(Adler32.checksum(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(Adler32.checksum([]) == 1)
        // Long input (forces the modulo reduction path) against naive sums.
        var rng = SeededGenerator(seed: 1950)
        let long = Payloads.randomBytes(200_000, rng: &rng)
        var a = 1, b = 0
        for byte in long { a = (a + Int(byte)) % 65521; b = (b + a) % 65521 }
        #expect(Adler32.checksum(long) == UInt32(b << 16 | a))
        #expect(CRC32.checksum(Array(long.prefix(5000))) == referenceCRC32(Array(long.prefix(5000))))
        let ff = [UInt8](repeating: 0xFF, count: 100_000)
        a = 1; b = 0
        for byte in ff { a = (a + Int(byte)) % 65521; b = (b + a) % 65521 }
        #expect(Adler32.checksum(ff) == UInt32(b << 16 | a))
    }

    @Test("zlib stored stream: header, block split at 65,535, NLEN, Adler-32", arguments: [0, 1, 65_535, 65_536, 200_000])
    func zlibStored(length: Int) throws {
        let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let stream = Zlib.stored(data)
        #expect(Array(stream.prefix(2)) == [0x78, 0x01])
        let (inflated, blocks) = try inflateStored(stream)
        #expect(inflated == data)
        #expect(blocks == max(1, (length + 65_534) / 65_535))
    }

    @Test("QR PNG structure: signature, IHDR, CRCs, zlib, rows of the expected width", arguments: [
        (1, 0), (1, 4), (3, 2), (4, 4), (8, 4), (32, 16),
    ])
    func qrPNG(scale: Int, border: Int) throws {
        let code = try QRCode("https://latch.example/open?payload=abc", errorCorrection: .quartile)
        let png = code.png(scale: scale, border: border)
        let parsed = try parsePNG(png)
        let side = (code.size + 2 * border) * scale
        #expect(parsed.chunkTypes == ["IHDR", "IDAT", "IEND"])
        #expect(parsed.width == side)
        #expect(parsed.height == side)
        #expect(parsed.bitDepth == 1)
        #expect(parsed.colorType == 0)

        let (raw, _) = try inflateStored(parsed.idat)
        let stride = (side + 7) / 8
        #expect(raw.count == (stride + 1) * side)
        // Every row starts with filter type 0, then the pixels: compare each
        // pixel with the module it renders (bit 1 = white).
        var mismatches = 0
        for y in 0..<side {
            let rowStart = y * (stride + 1)
            #expect(raw[rowStart] == 0)
            for x in 0..<side {
                let byte = raw[rowStart + 1 + x / 8]
                let white = (byte >> (7 - UInt8(x % 8))) & 1 == 1
                let dark = code[x / scale - border, y / scale - border]
                if white == dark { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
    }

    @Test("8-bit greyscale writer round-trips pixels")
    func eightBit() throws {
        let width = 5, height = 3
        let pixels: [UInt8] = (0..<(width * height)).map { UInt8($0 * 17) }
        let png = PNG.grayscale(width: width, height: height, bitDepth: 8, scanlines: pixels)
        let parsed = try parsePNG(png)
        #expect(parsed.width == 5 && parsed.height == 3 && parsed.bitDepth == 8 && parsed.colorType == 0)
        let (raw, _) = try inflateStored(parsed.idat)
        #expect(raw.count == (width + 1) * height)
        for y in 0..<height {
            #expect(raw[y * (width + 1)] == 0)
            #expect(Array(raw[(y * (width + 1) + 1)..<((y + 1) * (width + 1))]) == Array(pixels[(y * width)..<((y + 1) * width)]))
        }
    }

    @Test("scale and border are clamped; no crash on out-of-range values")
    func clamping() throws {
        let code = try QRCode([0x00, 0xFF, 0x10])
        let cases: [(Int, Int, Int, Int)] = [  // requested scale, border → effective
            (0, -3, 1, 0), (-100, 4, 1, 4), (33, 17, 32, 16), (Int.max, Int.max, 32, 16), (Int.min, Int.min, 1, 0),
        ]
        for (scale, border, effectiveScale, effectiveBorder) in cases {
            let parsed = try parsePNG(code.png(scale: scale, border: border))
            #expect(parsed.width == (code.size + 2 * effectiveBorder) * effectiveScale)
        }
    }

    @Test("data URI is the base64 of the PNG")
    func dataURI() throws {
        let code = try QRCode("data uri", errorCorrection: .low)
        let uri = code.dataURI(scale: 2, border: 1)
        let prefix = "data:image/png;base64,"
        #expect(uri.hasPrefix(prefix))
        let decoded = Data(base64Encoded: String(uri.dropFirst(prefix.count)))
        #expect(decoded.map(Array.init) == code.png(scale: 2, border: 1))
        // Base64 padding cases against Foundation.
        for n in 0..<8 {
            let bytes = (0..<n).map { UInt8($0 * 40 + 3) }
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
        }
    }
}
