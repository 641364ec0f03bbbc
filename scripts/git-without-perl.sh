#!/bin/sh
# Rebuild Debian's git package without its dependency on Perl: `git-without-perl.sh IN.deb
# OUT.deb`. Perl is half of what git brings into the image (about 50 MB) and serves only git's
# Perl-scripted commands (send-email, svn, cvs, the interactive-add fallback), none of which
# evalward runs. The package keeps every file and its other dependencies; its version gets
# `+noperl` appended, so dpkg's database says exactly what is installed: `apt-get check`
# passes, `apt-get install` works in an image built FROM evalward's, and installing perl (or a
# newer git) later works the ordinary way.
set -eu
in=$1
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -R "$in" "$work/pkg"
sed -i -E \
  -e '/^Depends:/ s/, perl(,|$)/\1/' \
  -e '/^Depends:/ s/, liberror-perl(,|$)/\1/' \
  -e '/^Depends:/ s/^Depends: (perl|liberror-perl)(, |$)/Depends: /' \
  -e '/^Version:/ s/$/+noperl/' \
  "$work/pkg/DEBIAN/control"
if grep -Eq '^(Pre-)?Depends:(.*[ ,])?(perl|liberror-perl)([ ,(:]|$)' "$work/pkg/DEBIAN/control"; then
  echo "git-without-perl.sh: $in still depends on Perl" >&2
  exit 1
fi
dpkg-deb --root-owner-group -b "$work/pkg" "$out" >/dev/null
