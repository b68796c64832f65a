//! Artifact media types come from the content first, the name second.

use executor_blob::guess_mime;

#[test]
fn sniffs_content_and_extension() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    assert_eq!(guess_mime("plot.bin", png), "image/png");
    assert_eq!(
        guess_mime("photo", b"\xff\xd8\xff\xe0\0\x10JFIF"),
        "image/jpeg"
    );
    assert_eq!(guess_mime("a.gif", b"GIF89a\x01\0"), "image/gif");
    assert_eq!(guess_mime("report", b"%PDF-1.7\n"), "application/pdf");
    assert_eq!(
        guess_mime("out.zip", b"PK\x03\x04\x14\0"),
        "application/zip"
    );
    assert_eq!(
        guess_mime("sheet.xlsx", b"PK\x03\x04\x14\0"),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    );
    assert_eq!(guess_mime("data.gz", b"\x1f\x8b\x08\0"), "application/gzip");
    assert_eq!(
        guess_mime("result", b"{\"ok\": [1, 2]}"),
        "application/json"
    );
    assert_eq!(
        guess_mime("result.json", b"{\"partial\": "),
        "application/json"
    );
    assert_eq!(
        guess_mime(
            "drawing",
            b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>"
        ),
        "image/svg+xml"
    );
    assert_eq!(guess_mime("d.svg", b"<svg/>"), "image/svg+xml");
    assert_eq!(
        guess_mime("table.csv", b"a,b\n1,2\n"),
        "text/csv; charset=utf-8"
    );
    assert_eq!(
        guess_mime("notes", "héllo wörld\n".as_bytes()),
        "text/plain; charset=utf-8"
    );
    // A multi-byte character cut by the sniff window is still text.
    assert_eq!(
        guess_mime("notes", &"héllo".as_bytes()[..2]),
        "text/plain; charset=utf-8"
    );
    assert_eq!(
        guess_mime("blob", b"\0\x01\x02\xfe"),
        "application/octet-stream"
    );
    assert_eq!(guess_mime("x.wasm", b"\0asm\x01\0\0\0"), "application/wasm");
    // A text extension does not make binary content text.
    assert_eq!(
        guess_mime("fake.txt", b"\0\x01\x02\xfe"),
        "application/octet-stream"
    );
    assert_eq!(guess_mime("empty", b""), "text/plain; charset=utf-8");
}
