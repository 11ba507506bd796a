# A netCDF dimension without a variable (netCDF-C's placeholder dataset,
# no data) is not an array: naming it lists the variables that are.
$PY -c '
import netCDF4
d = netCDF4.Dataset("a.nc", "w")
d.createDimension("lon", 4)
d.createVariable("tas", "f4", ("lon",))[:] = [1, 2, 3, 4]
d.close()' || exit 99
$CHUNKCTL info a.nc:/lon
