<?php
// Debian builds ctype, iconv and mbstring-free text helpers as shared extensions loaded from
// /etc/php/*/cli/conf.d: they must be there in the sandbox too.
var_dump(ctype_digit('12345'));
echo iconv('UTF-8', 'ASCII//TRANSLIT', 'abc'), "\n";
echo json_encode(['ok' => true]), "\n";
